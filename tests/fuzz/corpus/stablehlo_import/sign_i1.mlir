"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xi1>) -> tensor<4xi1>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xi1>):
    %0 = "stablehlo.sign"(%arg0) : (tensor<4xi1>) -> tensor<4xi1>
    "func.return"(%0) : (tensor<4xi1>) -> ()
  }) : () -> ()
}) : () -> ()
