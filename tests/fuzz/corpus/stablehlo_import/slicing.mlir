"builtin.module"() <{sym_name = "jit_slicing"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=8]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 8 : i64}]}} : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], function_type = (tensor<16x6xf32>) -> (tensor<16x6xf32>, tensor<16x5xf32>, tensor<16x6xf32>), res_attrs = [{jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg5: tensor<16x6xf32>):
    %5 = "stablehlo.slice"(%arg5) <{limit_indices = array<i64: 16, 6>, start_indices = array<i64: 0, 3>, strides = array<i64: 1, 1>}> : (tensor<16x6xf32>) -> tensor<16x3xf32>
    %6 = "stablehlo.negate"(%5) : (tensor<16x3xf32>) -> tensor<16x3xf32>
    %7 = "stablehlo.slice"(%arg5) <{limit_indices = array<i64: 16, 3>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<16x6xf32>) -> tensor<16x3xf32>
    %8 = "stablehlo.concatenate"(%6, %7) <{dimension = 1 : i64}> : (tensor<16x3xf32>, tensor<16x3xf32>) -> tensor<16x6xf32>
    %9 = "stablehlo.slice"(%arg5) <{limit_indices = array<i64: 16, 5>, start_indices = array<i64: 0, 1>, strides = array<i64: 1, 2>}> : (tensor<16x6xf32>) -> tensor<16x2xf32>
    %10 = "stablehlo.constant"() <{value = dense<-1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %11 = "func.call"(%9, %10) <{callee = @_pad}> : (tensor<16x2xf32>, tensor<f32>) -> tensor<16x5xf32>
    %12 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %13 = "stablehlo.broadcast_in_dim"(%12) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<16x6xf32>
    %14 = "stablehlo.multiply"(%8, %13) : (tensor<16x6xf32>, tensor<16x6xf32>) -> tensor<16x6xf32>
    %15 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %16 = "func.call"(%arg5, %15) <{callee = @_pad_0}> : (tensor<16x6xf32>, tensor<i32>) -> tensor<17x6xf32>
    %17 = "stablehlo.slice"(%16) <{limit_indices = array<i64: 16, 6>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<17x6xf32>) -> tensor<16x6xf32>
    %18 = "func.call"(%arg5) <{callee = @_flip}> : (tensor<16x6xf32>) -> tensor<16x6xf32>
    %19 = "stablehlo.add"(%17, %18) : (tensor<16x6xf32>, tensor<16x6xf32>) -> tensor<16x6xf32>
    "func.return"(%14, %11, %19) : (tensor<16x6xf32>, tensor<16x5xf32>, tensor<16x6xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<16x2xf32>, tensor<f32>) -> tensor<16x5xf32>, res_attrs = [{}], sym_name = "_pad", sym_visibility = "private"}> ({
  ^bb0(%arg3: tensor<16x2xf32>, %arg4: tensor<f32>):
    %3 = "stablehlo.convert"(%arg4) : (tensor<f32>) -> tensor<f32>
    %4 = "stablehlo.pad"(%arg3, %3) <{edge_padding_high = array<i64: 0, 1>, edge_padding_low = array<i64: 0, 2>, interior_padding = array<i64: 0, 0>}> : (tensor<16x2xf32>, tensor<f32>) -> tensor<16x5xf32>
    "func.return"(%4) : (tensor<16x5xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<16x6xf32>, tensor<i32>) -> tensor<17x6xf32>, res_attrs = [{}], sym_name = "_pad_0", sym_visibility = "private"}> ({
  ^bb0(%arg1: tensor<16x6xf32>, %arg2: tensor<i32>):
    %1 = "stablehlo.convert"(%arg2) : (tensor<i32>) -> tensor<f32>
    %2 = "stablehlo.pad"(%arg1, %1) <{edge_padding_high = array<i64: 0, 0>, edge_padding_low = array<i64: 1, 0>, interior_padding = array<i64: 0, 0>}> : (tensor<16x6xf32>, tensor<f32>) -> tensor<17x6xf32>
    "func.return"(%2) : (tensor<17x6xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<16x6xf32>) -> tensor<16x6xf32>, res_attrs = [{}], sym_name = "_flip", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<16x6xf32>):
    %0 = "stablehlo.reverse"(%arg0) <{dimensions = array<i64: 1>}> : (tensor<16x6xf32>) -> tensor<16x6xf32>
    "func.return"(%0) : (tensor<16x6xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
