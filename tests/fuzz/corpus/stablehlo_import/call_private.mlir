"builtin.module"() <{sym_name = "jit_f"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2]>, sym_name = "mesh"}> : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], function_type = (tensor<4x3xi32>) -> tensor<4x3xi32>, res_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4x3xi32>):
    %0 = "func.call"(%arg0) <{callee = @twice}> : (tensor<4x3xi32>) -> tensor<4x3xi32>
    %1 = "func.call"(%0) <{callee = @external}> : (tensor<4x3xi32>) -> tensor<4x3xi32>
    "func.return"(%1) : (tensor<4x3xi32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<4x3xi32>) -> tensor<4x3xi32>, sym_name = "twice", sym_visibility = "private"}> ({
  ^bb0(%arg1: tensor<4x3xi32>):
    %2 = "stablehlo.add"(%arg1, %arg1) : (tensor<4x3xi32>, tensor<4x3xi32>) -> tensor<4x3xi32>
    "func.return"(%2) : (tensor<4x3xi32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<4x3xi32>) -> tensor<4x3xi32>, sym_name = "external", sym_visibility = "private"}> ({
  }) : () -> ()
}) : () -> ()
