"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xbf16>) -> tensor<4xbf16>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xbf16>):
    %0 = "stablehlo.is_finite"(%arg0) : (tensor<4xbf16>) -> tensor<4xbf16>
    "func.return"(%0) : (tensor<4xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
