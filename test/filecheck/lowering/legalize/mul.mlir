// RUN: xnpu-opt %s --target=xnpu_lite -p legalize | filecheck %s
// RUN: xnpu-opt %s --target=xnpu_default -p legalize | filecheck %s --check-prefix=DEFAULT

// Seed 002 on xnpu_lite (no element-wise mul): a 1x3x5x7 * 1x3x5x7 mul becomes a depthwise
// 1x1 conv over C1 = 105 channels whose 105 kernels are the second operand (not a
// constant), then the mul's own rescale and a reshape back. The squeeze-excitation mul
// (a 1x3x1x1 gate times the map) is a depthwise conv of the map with the gate as 3 kernels.
// xnpu_default multiplies element-wise: no change.

builtin.module {
  func.func @main(%a: tensor<1x3x5x7xf32> {nn.name = "a"}, %b: tensor<1x3x5x7xf32> {nn.name = "b"}, %g: tensor<1x3x1x1xf32> {nn.name = "g"}) -> (tensor<1x3x5x7xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %a {scale = 0.01 : f64} : tensor<1x3x5x7xf32> -> tensor<1x3x5x7xi8>
    %1 = fixed.quantize %b {scale = 0.01 : f64} : tensor<1x3x5x7xf32> -> tensor<1x3x5x7xi8>
    %2 = fixed.quantize %g {scale = 0.01 : f64} : tensor<1x3x1x1xf32> -> tensor<1x3x1x1xi8>
    %3 = fixed.mul %0, %1 : (tensor<1x3x5x7xi8>, tensor<1x3x5x7xi8>) -> tensor<1x3x5x7xi16> loc("mul")
    %4 = fixed.rescale %3 {multiplier = array<i64: 20972>, shift = array<i64: 21>} : tensor<1x3x5x7xi16> -> tensor<1x3x5x7xi8> loc("mul")
    %5 = fixed.mul %2, %4 : (tensor<1x3x1x1xi8>, tensor<1x3x5x7xi8>) -> tensor<1x3x5x7xi16> loc("se")
    %6 = fixed.rescale %5 {multiplier = array<i64: 20972>, shift = array<i64: 21>} : tensor<1x3x5x7xi16> -> tensor<1x3x5x7xi8> loc("se")
    %7 = fixed.dequantize %6 {scale = 0.01 : f64} : tensor<1x3x5x7xi8> -> tensor<1x3x5x7xf32>
    func.return %7 : tensor<1x3x5x7xf32>
  }
}

// CHECK:      %[[A:.*]] = fixed.quantize %a
// CHECK-NEXT: %[[B:.*]] = fixed.quantize %b
// CHECK-NEXT: %[[G:.*]] = fixed.quantize %g
// CHECK-NEXT: %[[FA:.*]] = fixed.reshape %[[A]] : tensor<1x3x5x7xi8> -> tensor<1x105x1x1xi8> loc("mul")
// CHECK-NEXT: %[[K:.*]] = fixed.reshape %[[B]] : tensor<1x3x5x7xi8> -> tensor<105x1x1x1xi8> loc("mul")
// CHECK-NEXT: %[[P:.*]] = fixed.conv2d %[[FA]], %[[K]] {{{.*}}group = 105 : i64} : (tensor<1x105x1x1xi8>, tensor<105x1x1x1xi8>) -> tensor<1x105x1x1xi32>
// CHECK-NEXT: %[[R:.*]] = fixed.rescale %[[P]] {multiplier = array<i64: 20972>, shift = array<i64: 21>} : tensor<1x105x1x1xi32> -> tensor<1x105x1x1xi8>
// CHECK-NEXT: %[[Y:.*]] = fixed.reshape %[[R]] : tensor<1x105x1x1xi8> -> tensor<1x3x5x7xi8> loc("mul")
// CHECK-NEXT: %[[GK:.*]] = fixed.reshape %[[G]] : tensor<1x3x1x1xi8> -> tensor<3x1x1x1xi8> loc("se")
// CHECK-NEXT: %[[Q:.*]] = fixed.conv2d %[[Y]], %[[GK]] {{{.*}}group = 3 : i64} : (tensor<1x3x5x7xi8>, tensor<3x1x1x1xi8>) -> tensor<1x3x5x7xi32> loc("se")
// CHECK-NEXT: fixed.rescale %[[Q]] {multiplier = array<i64: 20972>, shift = array<i64: 21>} : tensor<1x3x5x7xi32> -> tensor<1x3x5x7xi8> loc("se")
// CHECK-NOT:  fixed.mul

// DEFAULT:     fixed.mul
// DEFAULT:     fixed.mul
// DEFAULT-NOT: fixed.conv2d
