"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x5xi32>) -> tensor<i32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4x5xi32>):
    %0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %1 = "stablehlo.reduce"(%arg0, %0) <{dimensions = array<i64: 1, 0>}> ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %c = "stablehlo.compare"(%a, %b) <{comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %3 = "stablehlo.select"(%c, %a, %b) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%3) : (tensor<i32>) -> ()
    }) : (tensor<4x5xi32>, tensor<i32>) -> tensor<i32>
    "func.return"(%1) : (tensor<i32>) -> ()
  }) : () -> ()
}) : () -> ()
