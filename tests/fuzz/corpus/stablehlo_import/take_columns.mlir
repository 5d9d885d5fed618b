"builtin.module"() <{sym_name = "jit_take_columns"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=8]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 8 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {sdy.sharding = #sdy.sharding<@mesh, [{}]>}], function_type = (tensor<8x7xf32>, tensor<5xi32>) -> tensor<8x5xf32>, res_attrs = [{jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg2: tensor<8x7xf32>, %arg3: tensor<5xi32>):
    %2 = "func.call"(%arg2, %arg3) <{callee = @_take}> : (tensor<8x7xf32>, tensor<5xi32>) -> tensor<8x5xf32>
    %3 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %4 = "stablehlo.broadcast_in_dim"(%3) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<8x5xf32>
    %5 = "stablehlo.multiply"(%2, %4) : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
    "func.return"(%5) : (tensor<8x5xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<8x7xf32>, tensor<5xi32>) -> tensor<8x5xf32>, res_attrs = [{}], sym_name = "_take", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<8x7xf32>, %arg1: tensor<5xi32>):
    %0 = "stablehlo.broadcast_in_dim"(%arg1) <{broadcast_dimensions = array<i64: 0>}> : (tensor<5xi32>) -> tensor<5x1xi32>
    %1 = "stablehlo.gather"(%arg0, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 8, 1>}> : (tensor<8x7xf32>, tensor<5x1xi32>) -> tensor<8x5xf32>
    "func.return"(%1) : (tensor<8x5xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
