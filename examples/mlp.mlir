// One dense layer with ReLU, y = relu(x @ w + b), data-parallel over 4 devices: the batch (rows of
// x and y) is split over mesh axis x, the weights and bias are replicated. No communication.
//   tessera run examples/mlp.mlir   (4 CPU devices)
func.func @main(%x: tensor<16x32xf32> {tessera.sharding = "mesh{x=4} P(x,None)"},
                %w: tensor<32x64xf32> {tessera.sharding = "mesh{x=4} P()"},
                %b: tensor<64xf32> {tessera.sharding = "mesh{x=4} P()"})
    -> (tensor<16x64xf32> {tessera.sharding = "mesh{x=4} P(x,None)"}) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x64xf32>) -> tensor<16x64xf32>
  %h = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x64xf32>)
                     outs(%acc : tensor<16x64xf32>) -> tensor<16x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%empty : tensor<16x64xf32>)
                           dimensions = [0]
  %sum = arith.addf %h, %bias : tensor<16x64xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x64xf32>) -> tensor<16x64xf32>
  %y = arith.maximumf %sum, %zeros : tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
