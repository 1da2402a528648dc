// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// A 1-D kernel beyond the CONV unit (1 x 32 > 15) that is a multiple of its stride (4), on one
// channel (an STFT's frames): the signal read as 4 channels of hops (its rows of 4, transposed
// by the DMA), convolved with stride 1 by the folded 1 x 8 kernels w'[o, s, 0, j] = w[o, 0, 0, 4 j + s].

builtin.module {
  func.func @main(%a: tensor<1x1x1x64xf32>) -> tensor<1x2x1x9xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x1x1x64xf32> -> tensor<1x1x1x64xi8>
    %w = fixed.constant dense<[[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]]], [[[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]]]]> : tensor<2x1x1x32xi8>
    %0 = fixed.conv2d %x, %w {strides = array<i64: 1, 4>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x1x64xi8>, tensor<2x1x1x32xi8>) -> tensor<1x2x1x9xi32> loc("frames")
    %1 = fixed.rescale %0 {multiplier = array<i64: 16384>, shift = array<i64: 20>} : tensor<1x2x1x9xi32> -> tensor<1x2x1x9xi8> loc("frames")
    %2 = fixed.dequantize %1 {scale = 0.0078125 : f64} : tensor<1x2x1x9xi8> -> tensor<1x2x1x9xf32>
    func.return %2 : tensor<1x2x1x9xf32>
  }
}
// CHECK-NOT:  npu.host
// CHECK:      npu.reshape %{{.*}} : tensor<1x1x1x64xi8> -> tensor<1x16x4xi8>
// CHECK:      npu.transpose %{{.*}} {perm = array<i64: 0, 2, 3, 1>} : tensor<1x16x1x4xi8> -> tensor<1x1x4x16xi8>
// CHECK:      %[[M:.*]] = npu.reshape %{{.*}} : tensor<1x4x16xi8> -> tensor<1x4x1x16xi8>
// CHECK:      fixed.constant dense<{{\[\[\[\[}}0, 4, 8, 12, 16, 20, 24, 28]], {{\[\[}}1, 5, 9, 13, 17, 21, 25, 29]]
// CHECK-SAME: tensor<2x4x1x8xi8>
// CHECK:      npu.conv %[[M]], %{{.*}} {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64{{.*}}} : (tensor<1x4x1x16xi8>, tensor<2x4x1x8xi8>) -> tensor<1x2x1x9xi8>
