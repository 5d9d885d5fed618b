"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "stablehlo.while"(%arg0) ({
    ^bb0(%a: tensor<4xf32>):
      %c = "func.call"(%a) <{callee = @empty}> : (tensor<4xf32>) -> tensor<i1>
      "stablehlo.return"(%c) : (tensor<i1>) -> ()
    }, {
    ^bb0(%b: tensor<4xf32>):
      "stablehlo.return"(%b) : (tensor<4xf32>) -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%0) : (tensor<4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<i1>, sym_name = "empty", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<4xf32>):
  }) : () -> ()
}) : () -> ()
