"builtin.module"() <{sym_name = "jit_reshapes"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=8]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 8 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], function_type = (tensor<8x6xf32>) -> tensor<4x12xf32>, res_attrs = [{jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<8x6xf32>):
    %0 = "stablehlo.reshape"(%arg0) : (tensor<8x6xf32>) -> tensor<8x2x3xf32>
    %1 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<8x2x3xf32>
    %3 = "stablehlo.multiply"(%0, %2) : (tensor<8x2x3xf32>, tensor<8x2x3xf32>) -> tensor<8x2x3xf32>
    %4 = "stablehlo.reshape"(%3) : (tensor<8x2x3xf32>) -> tensor<8x6xf32>
    %5 = "stablehlo.reshape"(%4) : (tensor<8x6xf32>) -> tensor<4x12xf32>
    %6 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %7 = "stablehlo.broadcast_in_dim"(%6) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<4x12xf32>
    %8 = "stablehlo.add"(%5, %7) : (tensor<4x12xf32>, tensor<4x12xf32>) -> tensor<4x12xf32>
    "func.return"(%8) : (tensor<4x12xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
