"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x5xi32>) -> tensor<4xi32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4x5xi32>):
    %0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %1 = "stablehlo.reduce"(%arg0, %0) <{dimensions = array<i64: 1>}> ({
    ^bb0(%a: tensor<index>, %b: tensor<index>):
      %2 = "stablehlo.bitcast_convert"(%a) : (tensor<index>) -> tensor<i32>
      "stablehlo.return"(%2) : (tensor<i32>) -> ()
    }) : (tensor<4x5xi32>, tensor<i32>) -> tensor<4xi32>
    "func.return"(%1) : (tensor<4xi32>) -> ()
  }) : () -> ()
}) : () -> ()
