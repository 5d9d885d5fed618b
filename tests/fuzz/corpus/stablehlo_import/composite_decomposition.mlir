"builtin.module"() ({
  "func.func"() <{function_type = (tensor<8x4xf32>) -> tensor<8x4xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<8x4xf32>):
    %0 = "stablehlo.composite"(%arg0) <{decomposition = @helper, name = "chlo.neg", version = 1 : i32}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
    "func.return"(%0) : (tensor<8x4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<8x4xf32>) -> tensor<8x4xf32>, sym_name = "helper", sym_visibility = "private"}> ({
  ^bb0(%h: tensor<8x4xf32>):
    %n = "stablehlo.negate"(%h) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    "func.return"(%n) : (tensor<8x4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
