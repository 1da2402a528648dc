// RUN: %roundtrip

// Binary ops broadcast as numpy/ONNX do; the result type is the broadcast shape.

func.func @binary(%x: tensor<1x4x8x8xf32>, %c: tensor<4x1x1xf32>, %s: tensor<f32>, %row: tensor<1x8xf32>, %col: tensor<3x1xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<3x8xf32>) {
  %add = nn.add %x, %c : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32> loc("Add_3")
  %sub = nn.sub %s, %x : (tensor<f32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %mul = nn.mul %x, %c : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %div = nn.div %col, %row : (tensor<3x1xf32>, tensor<1x8xf32>) -> tensor<3x8xf32>
  func.return %add, %sub, %mul, %div : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<3x8xf32>
}

// CHECK:      func.func @binary(
// CHECK-NEXT:   %add = nn.add %x, %c : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32> loc("Add_3")
// CHECK-NEXT:   %sub = nn.sub %s, %x : (tensor<f32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %mul = nn.mul %x, %c : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:   %div = nn.div %col, %row : (tensor<3x1xf32>, tensor<1x8xf32>) -> tensor<3x8xf32>
