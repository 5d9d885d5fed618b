// A two-layer MLP with Megatron-style tensor parallelism over 4 devices:
//   h = relu(x @ w1 + b1)   w1 column-sharded (each device computes a quarter of h's columns)
//   y = h @ w2 + b2         w2 row-sharded (each device a partial sum of y)
// x, b2 and y are replicated; the only communication is one all-reduce of y's partial sums.
func.func @main(%x: tensor<8x16xf32> {tessera.sharding = "mesh{x=4} P()"},
                %w1: tensor<16x32xf32> {tessera.sharding = "mesh{x=4} P(None,x)"},
                %b1: tensor<32xf32> {tessera.sharding = "mesh{x=4} P(x)"},
                %w2: tensor<32x16xf32> {tessera.sharding = "mesh{x=4} P(x,None)"},
                %b2: tensor<16xf32> {tessera.sharding = "mesh{x=4} P()"})
    -> (tensor<8x16xf32> {tessera.sharding = "mesh{x=4} P()"}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %acc1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm1 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>)
                       outs(%acc1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %bias1 = linalg.broadcast ins(%b1 : tensor<32xf32>) outs(%e1 : tensor<8x32xf32>)
                            dimensions = [0]
  %pre = arith.addf %mm1, %bias1 : tensor<8x32xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = arith.maximumf %pre, %zeros : tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %mm2 = linalg.matmul ins(%h, %w2 : tensor<8x32xf32>, tensor<32x16xf32>)
                       outs(%acc2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %bias2 = linalg.broadcast ins(%b2 : tensor<16xf32>) outs(%e2 : tensor<8x16xf32>)
                            dimensions = [0]
  %y = arith.addf %mm2, %bias2 : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
