"builtin.module"() <{sym_name = "jit_vmap_indexing"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=8]>, sym_name = "mesh"}> : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], function_type = (tensor<8x6xf32>, tensor<8x1xi32>) -> (tensor<8x2xf32>, tensor<8x6xf32>), sym_name = "main"}> ({
  ^bb0(%arg0: tensor<8x6xf32>, %arg1: tensor<8x1xi32>):
    %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 2>}> : (tensor<8x6xf32>, tensor<8x1xi32>) -> tensor<8x2xf32>
    %1 = "stablehlo.scatter"(%arg0, %arg1, %0) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>, unique_indices = true}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %2 = "sdy.sharding_constraint"(%arg2) <{sharding = #sdy.sharding<@mesh, []>}> : (tensor<f32>) -> tensor<f32>
      %3 = "stablehlo.add"(%2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%3) : (tensor<f32>) -> ()
    }) : (tensor<8x6xf32>, tensor<8x1xi32>, tensor<8x2xf32>) -> tensor<8x6xf32>
    "func.return"(%0, %1) : (tensor<8x2xf32>, tensor<8x6xf32>) -> ()
  }) : () -> ()
}) : () -> ()
