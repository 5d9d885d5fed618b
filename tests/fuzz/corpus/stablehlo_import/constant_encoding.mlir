"builtin.module"() ({
  "func.func"() <{function_type = () -> tensor<2xf32, 1>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0():
    %0 = "stablehlo.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf32, 1>}> : () -> tensor<2xf32, 1>
    "func.return"(%0) : (tensor<2xf32, 1>) -> ()
  }) : () -> ()
}) : () -> ()
