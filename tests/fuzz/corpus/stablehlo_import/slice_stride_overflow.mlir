"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<1xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "stablehlo.slice"(%arg0) <{start_indices = array<i64: 0>, limit_indices = array<i64: 4>, strides = array<i64: 9223372036854775807>}> : (tensor<4xf32>) -> tensor<1xf32>
    "func.return"(%0) : (tensor<1xf32>) -> ()
  }) : () -> ()
}) : () -> ()
