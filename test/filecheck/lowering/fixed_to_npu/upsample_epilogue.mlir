// RUN: xnpu-opt %s -p 'legalize{target=xnpu_lite},lower-fixed-to-npu{target=xnpu_lite}' | filecheck %s

// A relu after a transposed convolution commutes with the interleave of its phases: on
// xnpu_lite (no clamp unit) legalize leaves it for the producer's flag, and each of the four
// phase CONVs gets the relu flag (no bias-add convolutions, no CLAMP).

builtin.module {
  func.func @main(%a: tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xi8>
    %w = fixed.constant dense<[[[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [[[-1, -2], [-3, -4]], [[9, 8], [7, 6]]]]> : tensor<2x2x2x2xi8>
    %t = fixed.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x3x3xi8>, tensor<2x2x2x2xi8>) -> tensor<1x2x6x6xi32> loc("deconv")
    %y = fixed.rescale %t {multiplier = array<i64: 16384>, shift = array<i64: 16>} : tensor<1x2x6x6xi32> -> tensor<1x2x6x6xi8> loc("deconv")
    %r = fixed.clamp %y {min = 0 : i64, max = 127 : i64} : tensor<1x2x6x6xi8> -> tensor<1x2x6x6xi8> loc("relu")
    %0 = fixed.dequantize %r {scale = 0.0078125 : f64} : tensor<1x2x6x6xi8> -> tensor<1x2x6x6xf32>
    func.return %0 : tensor<1x2x6x6xf32>
  }
}

// CHECK-NOT:  npu.clamp
// CHECK:      %[[C0:.*]] = npu.conv %x, %{{.*}} {{{.*}}multiplier = array<i64: 16384>, shift = array<i64: 16>, relu} : (tensor<1x2x3x3xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x3x3xi8>
// CHECK:      %[[C1:.*]] = npu.conv %x, %{{.*}} {{{.*}}relu}
// CHECK:      %[[C2:.*]] = npu.conv %x, %{{.*}} {{{.*}}relu}
// CHECK:      %[[C3:.*]] = npu.conv %x, %{{.*}} {{{.*}}relu}
// CHECK-NEXT: %[[Y:.*]] = npu.interleave %[[C0]], %[[C1]], %[[C2]], %[[C3]] {factors = array<i64: 2, 2>
// CHECK-NEXT: fixed.dequantize %[[Y]]
// CHECK-NOT:  npu.conv
