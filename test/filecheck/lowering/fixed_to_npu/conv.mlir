// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_lite}' | filecheck %s

// The CONV unit (conv.mlir patterns): a convolution with its bias, one without, a
// dilation-2 convolution on xnpu_lite (max dilation 1) as a dense 5x5 kernel with zeros
// between the taps, and a gemm whose K x M weights become M x K; each rescale to int8 is the
// unit's output stage, and a relu after it is the unit's relu flag.

builtin.module {
  func.func @main(%a: tensor<1x2x8x8xf32>) -> (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>, tensor<1x4xf32>) {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xi8>
    %w = fixed.constant dense<1> : tensor<3x2x3x3xi8>
    %b = fixed.constant dense<[1, 2, 3]> : tensor<3xi32>
    %0 = fixed.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x8x8xi8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x8x8xi32> loc("conv")
    %1 = fixed.rescale %0 {multiplier = array<i64: 16384, 20000, 30000>, shift = array<i64: 18, 18, 19>, axis = 1 : i64} : tensor<1x3x8x8xi32> -> tensor<1x3x8x8xi8> loc("conv")
    %2 = fixed.clamp %1 {min = 0 : i64, max = 127 : i64} : tensor<1x3x8x8xi8> -> tensor<1x3x8x8xi8> loc("relu")
    %3 = fixed.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x2x8x8xi8>, tensor<3x2x3x3xi8>) -> tensor<1x3x4x4xi32> loc("dilated")
    %4 = fixed.rescale %3 {multiplier = array<i64: 16384>, shift = array<i64: 17>} : tensor<1x3x4x4xi32> -> tensor<1x3x4x4xi8> loc("dilated")
    %5 = fixed.flatten %x {axis = 1 : i64} : tensor<1x2x8x8xi8> -> tensor<1x128xi8> loc("flatten")
    %k = fixed.constant dense<2> : tensor<128x4xi8>
    %6 = fixed.gemm %5, %k {trans_b = 0 : i64} : (tensor<1x128xi8>, tensor<128x4xi8>) -> tensor<1x4xi32> loc("fc")
    %7 = fixed.rescale %6 {multiplier = array<i64: 16384>, shift = array<i64: 20>} : tensor<1x4xi32> -> tensor<1x4xi8> loc("fc")
    %8 = fixed.dequantize %2 {scale = 0.0625 : f64} : tensor<1x3x8x8xi8> -> tensor<1x3x8x8xf32>
    %9 = fixed.dequantize %4 {scale = 0.0625 : f64} : tensor<1x3x4x4xi8> -> tensor<1x3x4x4xf32>
    %10 = fixed.dequantize %7 {scale = 0.0625 : f64} : tensor<1x4xi8> -> tensor<1x4xf32>
    func.return %8, %9, %10 : tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>, tensor<1x4xf32>
  }
}

// CHECK:      builtin.module attributes {npu.target = "xnpu_lite"}
// CHECK:      %[[X:.*]] = fixed.quantize
// CHECK:      %[[Y:.*]] = npu.conv %[[X]], %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384, 20000, 30000>, shift = array<i64: 18, 18, 19>, relu} : (tensor<1x2x8x8xi8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x8x8xi8> loc(fused["conv", "relu"])
// CHECK-NOT:  fixed.clamp
// CHECK:      %[[D:.*]] = fixed.constant dense<{{.*}}> : tensor<3x2x5x5xi8> loc("dilated")
// CHECK-NEXT: npu.conv %[[X]], %[[D]] {strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 17>} : (tensor<1x2x8x8xi8>, tensor<3x2x5x5xi8>) -> tensor<1x3x4x4xi8> loc("dilated")
// CHECK:      %[[F:.*]] = npu.reshape %[[X]] : tensor<1x2x8x8xi8> -> tensor<1x128xi8> loc("flatten")
// CHECK:      %[[K:.*]] = fixed.constant dense<2> : tensor<4x128xi8> loc("fc")
// CHECK-NEXT: npu.conv %[[F]], %[[K]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 20>} : (tensor<1x128xi8>, tensor<4x128xi8>) -> tensor<1x4xi8> loc("fc")
// CHECK-NOT:  fixed.conv2d
// CHECK-NOT:  fixed.gemm
// CHECK-NOT:  fixed.rescale
