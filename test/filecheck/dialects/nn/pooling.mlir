// RUN: %roundtrip

func.func @pooling(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x5x5xf32>, tensor<1x4x1x1xf32>) {
  %max = nn.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32> loc("MaxPool_2")
  %avg = nn.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 0 : i64, ceil_mode = 1 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x5x5xf32>
  %global = nn.global_average_pool %x : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
  func.return %max, %avg, %global : tensor<1x4x4x4xf32>, tensor<1x4x5x5xf32>, tensor<1x4x1x1xf32>
}

// CHECK:      func.func @pooling(%x: tensor<1x4x8x8xf32>)
// CHECK-NEXT:   %max = nn.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32> loc("MaxPool_2")
// CHECK-NEXT:   %avg = nn.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 0 : i64, ceil_mode = 1 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x5x5xf32>
// CHECK-NEXT:   %global = nn.global_average_pool %x : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
