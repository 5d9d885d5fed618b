"builtin.module"() ({
  "func.func"() <{function_type = () -> tensor<3xi8>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0():
    %0 = "stablehlo.iota"() <{iota_dimension = 18446744073709551616 : i128}> : () -> tensor<3xi8>
    "func.return"(%0) : (tensor<3xi8>) -> ()
  }) : () -> ()
}) : () -> ()
