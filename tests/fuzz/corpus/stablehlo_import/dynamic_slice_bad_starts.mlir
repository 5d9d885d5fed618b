"builtin.module"() ({
  "func.func"() <{function_type = (tensor<8x4xf32>, tensor<ui64>) -> tensor<8x4xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<8x4xf32>, %arg1: tensor<ui64>):
    %0 = "stablehlo.dynamic_slice"(%arg0, %arg1, %arg1) <{slice_sizes = array<i64: -1, 4>}> : (tensor<8x4xf32>, tensor<ui64>, tensor<ui64>) -> tensor<2x4xf32>
    %1 = "stablehlo.dynamic_update_slice"(%arg0, %0, %arg1, %arg1) : (tensor<8x4xf32>, tensor<2x4xf32>, tensor<ui64>, tensor<ui64>) -> tensor<8x4xf32>
    "func.return"(%1) : (tensor<8x4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
