"builtin.module"() <{sym_name = "jit__device_put_reshard"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=8], device_ids=[7, 6, 5, 4, 3, 2, 1, 1]>,
      sym_name = "mesh"}> : () -> ()
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=8]>, sym_name = "mesh_0"}> : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}],
      function_type = (tensor<8x8xf32>) -> tensor<8x8xf32>,
      res_attrs = [{sdy.sharding = #sdy.sharding<@mesh_0, [{"x"}, {}]>}], sym_name = "main"}> ({
  ^bb0(%arg0: tensor<8x8xf32>):
    "func.return"(%arg0) : (tensor<8x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
