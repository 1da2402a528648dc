// RUN: xnpu-opt %s --target=xnpu_lite -p legalize | filecheck %s

// Seed 002 on tokens (xnpu_lite: no element-wise mul): [1, 4, 6] * [1, 4, 6] (a LayerNorm's
// deviations times their reciprocal deviations) is a depthwise 1x1 conv over C1 = 24 channels
// whose kernels are the second operand, then the mul's rescale and a reshape back.

builtin.module {
  func.func @main(%a: tensor<1x4x6xf32> {nn.name = "a"}, %b: tensor<1x4x6xf32> {nn.name = "b"}) -> (tensor<1x4x6xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %a {scale = 0.01 : f64} : tensor<1x4x6xf32> -> tensor<1x4x6xi8>
    %1 = fixed.quantize %b {scale = 0.01 : f64} : tensor<1x4x6xf32> -> tensor<1x4x6xi8>
    %2 = fixed.mul %0, %1 : (tensor<1x4x6xi8>, tensor<1x4x6xi8>) -> tensor<1x4x6xi16> loc("mul")
    %3 = fixed.rescale %2 {multiplier = array<i64: 20972>, shift = array<i64: 21>} : tensor<1x4x6xi16> -> tensor<1x4x6xi8> loc("mul")
    %4 = fixed.dequantize %3 {scale = 0.01 : f64} : tensor<1x4x6xi8> -> tensor<1x4x6xf32>
    func.return %4 : tensor<1x4x6xf32>
  }
}

// CHECK:      %[[A:.*]] = fixed.quantize %a
// CHECK-NEXT: %[[B:.*]] = fixed.quantize %b
// CHECK-NEXT: %[[FA:.*]] = fixed.reshape %[[A]] : tensor<1x4x6xi8> -> tensor<1x24x1x1xi8> loc("mul")
// CHECK-NEXT: %[[K:.*]] = fixed.reshape %[[B]] : tensor<1x4x6xi8> -> tensor<24x1x1x1xi8> loc("mul")
// CHECK-NEXT: %[[P:.*]] = fixed.conv2d %[[FA]], %[[K]] {{{.*}}group = 24 : i64} : (tensor<1x24x1x1xi8>, tensor<24x1x1x1xi8>) -> tensor<1x24x1x1xi32>
// CHECK-NEXT: %[[R:.*]] = fixed.rescale %[[P]] {multiplier = array<i64: 20972>, shift = array<i64: 21>} : tensor<1x24x1x1xi32> -> tensor<1x24x1x1xi8>
// CHECK-NEXT: fixed.reshape %[[R]] : tensor<1x24x1x1xi8> -> tensor<1x4x6xi8> loc("mul")
// CHECK-NOT:  fixed.mul
