"builtin.module"() <{sym_name = "jit_switch"}> ({
  "func.func"() <{function_type = (tensor<i32>, tensor<f32>) -> (tensor<f32>, tensor<i32>),
      sym_name = "main"}> ({
  ^bb0(%arg0: tensor<i32>, %arg1: tensor<f32>):
    %0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %1 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %2 = "stablehlo.clamp"(%0, %arg0, %1) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = "stablehlo.case"(%2) ({
      %6 = "stablehlo.constant"() <{value = dense<3.000000e+00> : tensor<f32>}> : () -> tensor<f32>
      %7 = "stablehlo.multiply"(%arg1, %6) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%7) : (tensor<f32>) -> ()
    }, {
      %4 = "stablehlo.negate"(%arg1) : (tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%4) : (tensor<f32>) -> ()
    }) : (tensor<i32>) -> tensor<f32>
    %8:2 = "stablehlo.optimization_barrier"(%3, %2) : (tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
    "func.return"(%8#0, %8#1) : (tensor<f32>, tensor<i32>) -> ()
  }) : () -> ()
}) : () -> ()
