// RUN: xnpu-opt %s --target=xnpu_lite -p legalize | filecheck %s

// Seed 001's bias-adds are depthwise convolutions of an NCHW map: a clip of [1, L, C] tokens
// (a matrix of its last axis) is left as it is, for unit selection (a TABLE on xnpu_lite).

builtin.module {
  func.func @main(%a: tensor<1x4x3xf32>) -> tensor<1x4x3xf32> {
    %0 = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x4x3xf32> -> tensor<1x4x3xi8>
    %1 = fixed.clamp %0 {min = -64 : i64, max = 100 : i64} : tensor<1x4x3xi8> -> tensor<1x4x3xi8>
    %2 = fixed.dequantize %1 {scale = 0.0078125 : f64} : tensor<1x4x3xi8> -> tensor<1x4x3xf32>
    func.return %2 : tensor<1x4x3xf32>
  }
}
// CHECK-NOT:  fixed.conv2d
// CHECK:      fixed.clamp %{{.*}} {min = -64 : i64, max = 100 : i64} : tensor<1x4x3xi8> -> tensor<1x4x3xi8>
// CHECK-NOT:  fixed.conv2d
