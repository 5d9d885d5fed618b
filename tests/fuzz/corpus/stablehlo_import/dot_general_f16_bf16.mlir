"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2x3xf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<2x3xf16>, %arg1: tensor<3x4xbf16>):
    %0 = "stablehlo.dot_general"(%arg0, %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : (tensor<2x3xf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
    "func.return"(%0) : (tensor<2x4xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
