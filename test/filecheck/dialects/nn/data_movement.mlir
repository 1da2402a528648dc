// RUN: %roundtrip

func.func @data_movement(%x: tensor<1x4x2x3xf32>, %y: tensor<1x2x2x3xf32>) -> (tensor<4x6xf32>, tensor<1x24xf32>, tensor<24x1xf32>, tensor<1x3x2x4xf32>, tensor<1x6x2x3xf32>) {
  %reshape = nn.reshape %x : tensor<1x4x2x3xf32> -> tensor<4x6xf32> loc("Reshape_5")
  %flatten = nn.flatten %x {axis = 1 : i64} : tensor<1x4x2x3xf32> -> tensor<1x24xf32>
  %flatten_end = nn.flatten %x {axis = 4 : i64} : tensor<1x4x2x3xf32> -> tensor<24x1xf32>
  %transpose = nn.transpose %x {perm = array<i64: 0, 3, 2, 1>} : tensor<1x4x2x3xf32> -> tensor<1x3x2x4xf32>
  %concat = nn.concat %x, %y {axis = 1 : i64} : (tensor<1x4x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x6x2x3xf32> loc("Concat_7")
  func.return %reshape, %flatten, %flatten_end, %transpose, %concat : tensor<4x6xf32>, tensor<1x24xf32>, tensor<24x1xf32>, tensor<1x3x2x4xf32>, tensor<1x6x2x3xf32>
}

// CHECK:      func.func @data_movement(
// CHECK-NEXT:   %reshape = nn.reshape %x : tensor<1x4x2x3xf32> -> tensor<4x6xf32> loc("Reshape_5")
// CHECK-NEXT:   %flatten = nn.flatten %x {axis = 1 : i64} : tensor<1x4x2x3xf32> -> tensor<1x24xf32>
// CHECK-NEXT:   %flatten_end = nn.flatten %x {axis = 4 : i64} : tensor<1x4x2x3xf32> -> tensor<24x1xf32>
// CHECK-NEXT:   %transpose = nn.transpose %x {perm = array<i64: 0, 3, 2, 1>} : tensor<1x4x2x3xf32> -> tensor<1x3x2x4xf32>
// CHECK-NEXT:   %concat = nn.concat %x, %y {axis = 1 : i64} : (tensor<1x4x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x6x2x3xf32> loc("Concat_7")
