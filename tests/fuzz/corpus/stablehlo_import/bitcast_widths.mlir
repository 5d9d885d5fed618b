"builtin.module"() <{sym_name = "jit__lambda"}> ({
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<5xf32>, tensor<3x2xi16>) -> (tensor<5x4xui8>, tensor<3xi32>), res_attrs = [{jax.result_info = "result[0]"}, {jax.result_info = "result[1]"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<5xf32>, %arg1: tensor<3x2xi16>):
    %0 = "stablehlo.bitcast_convert"(%arg0) : (tensor<5xf32>) -> tensor<5x4xui8>
    %1 = "stablehlo.bitcast_convert"(%arg1) : (tensor<3x2xi16>) -> tensor<3xi32>
    "func.return"(%0, %1) : (tensor<5x4xui8>, tensor<3xi32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
