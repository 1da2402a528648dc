// RUN: %roundtrip

// Convolution, dense layers and batch normalization.

func.func @linear(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>, %dw: tensor<4x1x3x3xf32>, %a: tensor<2x3xf32>, %k: tensor<5x3xf32>, %c: tensor<5xf32>, %batched: tensor<7x2x3xf32>, %v: tensor<3xf32>, %p: tensor<4xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x4x8x8xf32>, tensor<2x5xf32>, tensor<7x2x5xf32>, tensor<7x2xf32>, tensor<1x4x8x8xf32>) {
  %conv = nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32> loc("Conv_0")
  %depthwise = nn.conv2d %x, %dw {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  %gemm = nn.gemm %a, %k, %c {alpha = 1.0 : f32, beta = 0.5 : f32, trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<2x5xf32> loc("Gemm_9")
  %kt = nn.transpose %k {perm = array<i64: 1, 0>} : tensor<5x3xf32> -> tensor<3x5xf32>
  %matmul = nn.matmul %batched, %kt : (tensor<7x2x3xf32>, tensor<3x5xf32>) -> tensor<7x2x5xf32>
  %matvec = nn.matmul %batched, %v : (tensor<7x2x3xf32>, tensor<3xf32>) -> tensor<7x2xf32>
  %bn = nn.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("BatchNormalization_1")
  func.return %conv, %depthwise, %gemm, %matmul, %matvec, %bn : tensor<1x6x4x4xf32>, tensor<1x4x8x8xf32>, tensor<2x5xf32>, tensor<7x2x5xf32>, tensor<7x2xf32>, tensor<1x4x8x8xf32>
}

// CHECK:      func.func @linear(
// CHECK-NEXT:   %conv = nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32> loc("Conv_0")
// CHECK-NEXT:   %depthwise = nn.conv2d %x, %dw {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %gemm = nn.gemm %a, %k, %c {alpha = 1.000000e+00 : f32, beta = 5.000000e-01 : f32, trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<2x5xf32> loc("Gemm_9")
// CHECK-NEXT:   %kt = nn.transpose %k {perm = array<i64: 1, 0>} : tensor<5x3xf32> -> tensor<3x5xf32>
// CHECK-NEXT:   %matmul = nn.matmul %batched, %kt : (tensor<7x2x3xf32>, tensor<3x5xf32>) -> tensor<7x2x5xf32>
// CHECK-NEXT:   %matvec = nn.matmul %batched, %v : (tensor<7x2x3xf32>, tensor<3xf32>) -> tensor<7x2xf32>
// CHECK-NEXT:   %bn = nn.batch_norm %x, %p, %p, %p, %p {epsilon = 1.000000e-05 : f32} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("BatchNormalization_1")
