// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// upsample.mlir: nearest x2 by replication is the input stored four times (one interleave,
// no unit); nearest with ceil reads an edge pad from shifted offsets (rows and columns
// m + 1 for the odd phases); linear half_pixel x2 is an edge pad and four depthwise 2x2
// CONVs with the kernels outer((1, 3), (1, 3)) and its mirrors, the fixed rescale unchanged
// (16 = 4 x 4 is in its multiplier); a stride-2 3x3 transposed convolution (pads 1,
// output_padding 1) is four CONVs by the flipped kernel's sub-kernels 1x1, 1x2, 2x1, 2x2
// (taps w[1, 1]; w[1, 2], w[1, 0]; ...), zero padded at the end, with the bias and the
// per-channel rescale of the fixed op.

builtin.module {
  func.func @main(%a: tensor<1x2x3x4xf32>) -> (tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x3x6x8xf32>) {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xi8>
    %n = fixed.resize %x {rows = array<i64: 0, 0, 1, 1, 2, 2>, cols = array<i64: 0, 0, 1, 1, 2, 2, 3, 3>} : tensor<1x2x3x4xi8> -> tensor<1x2x6x8xi8> loc("nearest")
    %c = fixed.resize %x {rows = array<i64: 0, 1, 1, 2, 2, 2>, cols = array<i64: 0, 1, 1, 2, 2, 3, 3, 3>} : tensor<1x2x3x4xi8> -> tensor<1x2x6x8xi8> loc("ceil")
    %l = fixed.resize_linear %x {rows = array<i64: 0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2>, row_weights = array<i64: 4, 0, 3, 1, 1, 3, 3, 1, 1, 3, 4, 0>, cols = array<i64: 0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 2, 3, 2, 3, 3, 3>, col_weights = array<i64: 4, 0, 3, 1, 1, 3, 3, 1, 1, 3, 3, 1, 1, 3, 4, 0>} : tensor<1x2x3x4xi8> -> tensor<1x2x6x8xi32> loc("linear")
    %lr = fixed.rescale %l {multiplier = array<i64: 16384>, shift = array<i64: 18>} : tensor<1x2x6x8xi32> -> tensor<1x2x6x8xi8> loc("linear")
    %w = fixed.constant dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[1, 0, -1], [0, 1, 0], [-1, 0, 1]], [[2, 2, 2], [-2, -2, -2], [0, 0, 0]]], [[[-3, 1, 4], [1, -5, 9], [2, 6, -5]], [[3, 5, -8], [9, 7, 9], [3, 2, 3]], [[8, 4, 6], [2, 6, 4], [3, 3, 8]]]]> : tensor<2x3x3x3xi8>
    %b = fixed.constant dense<[100, -200, 300]> : tensor<3xi32>
    %t = fixed.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x4xi8>, tensor<2x3x3x3xi8>, tensor<3xi32>) -> tensor<1x3x6x8xi32> loc("deconv")
    %tr = fixed.rescale %t {multiplier = array<i64: 16384, 20000, 30000>, shift = array<i64: 16, 17, 18>, axis = 1 : i64} : tensor<1x3x6x8xi32> -> tensor<1x3x6x8xi8> loc("deconv")
    %0 = fixed.dequantize %n {scale = 0.0078125 : f64} : tensor<1x2x6x8xi8> -> tensor<1x2x6x8xf32>
    %1 = fixed.dequantize %c {scale = 0.0078125 : f64} : tensor<1x2x6x8xi8> -> tensor<1x2x6x8xf32>
    %2 = fixed.dequantize %lr {scale = 0.0078125 : f64} : tensor<1x2x6x8xi8> -> tensor<1x2x6x8xf32>
    %3 = fixed.dequantize %tr {scale = 0.0078125 : f64} : tensor<1x3x6x8xi8> -> tensor<1x3x6x8xf32>
    func.return %0, %1, %2, %3 : tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x3x6x8xf32>
  }
}

// CHECK:      %[[X:.*]] = fixed.quantize %a
// CHECK-NEXT: npu.interleave %[[X]], %[[X]], %[[X]], %[[X]] {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : ({{.*}}) -> tensor<1x2x6x8xi8> loc("nearest")
// CHECK-NEXT: %[[P:.*]] = npu.pad "edge" %[[X]] {pads = array<i64: 0, 0, 1, 1>} : tensor<1x2x3x4xi8> -> tensor<1x2x4x5xi8> loc("ceil")
// CHECK-NEXT: npu.interleave %[[P]], %[[P]], %[[P]], %[[P]] {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 1, 1, 0, 1, 1>} : ({{.*}}) -> tensor<1x2x6x8xi8> loc("ceil")
// CHECK-NEXT: %[[E:.*]] = npu.pad "edge" %[[X]] {pads = array<i64: 1, 1, 1, 1>} : tensor<1x2x3x4xi8> -> tensor<1x2x5x6xi8> loc("linear")
// CHECK-NEXT: %[[K0:.*]] = fixed.constant dense<{{\[\[\[\[}}1, 3], [3, 9]]], {{\[\[\[}}1, 3], [3, 9]]]]> : tensor<2x1x2x2xi8>
// CHECK-NEXT: %[[L0:.*]] = npu.conv %[[E]], %[[K0]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64, multiplier = array<i64: 16384>, shift = array<i64: 18>} : (tensor<1x2x5x6xi8>, tensor<2x1x2x2xi8>) -> tensor<1x2x4x5xi8>
// CHECK-NEXT: fixed.constant dense<{{\[\[\[\[}}3, 1], [9, 3]]]
// CHECK-NEXT: %[[L1:.*]] = npu.conv %[[E]]
// CHECK-NEXT: fixed.constant dense<{{\[\[\[\[}}3, 9], [1, 3]]]
// CHECK-NEXT: %[[L2:.*]] = npu.conv %[[E]]
// CHECK-NEXT: fixed.constant dense<{{\[\[\[\[}}9, 3], [3, 1]]]
// CHECK-NEXT: %[[L3:.*]] = npu.conv %[[E]]
// CHECK-NEXT: npu.interleave %[[L0]], %[[L1]], %[[L2]], %[[L3]] {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 1, 1, 0, 1, 1>} : ({{.*}}) -> tensor<1x2x6x8xi8> loc("linear")
// CHECK:      %[[B:.*]] = fixed.constant dense<[100, -200, 300]>
// CHECK-NEXT: %[[T0W:.*]] = fixed.constant dense<{{\[\[\[\[}}5]], {{\[\[}}-5]]], {{\[\[\[}}1]], {{\[\[}}7]]], {{\[\[\[}}-2]], {{\[\[}}6]]]]> : tensor<3x2x1x1xi8> loc("deconv")
// CHECK-NEXT: %[[T0:.*]] = npu.conv %[[X]], %[[T0W]], %[[B]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384, 20000, 30000>, shift = array<i64: 16, 17, 18>} : (tensor<1x2x3x4xi8>, tensor<3x2x1x1xi8>, tensor<3xi32>) -> tensor<1x3x3x4xi8> loc("deconv")
// CHECK-NEXT: %[[T1W:.*]] = fixed.constant dense<{{\[\[\[\[}}6, 4]], {{\[\[}}9, 1]]]{{.*}} : tensor<3x2x1x2xi8>
// CHECK-NEXT: %[[T1:.*]] = npu.conv %[[X]], %[[T1W]], %[[B]] {{{.*}}pads = array<i64: 0, 0, 0, 1>{{.*}} -> tensor<1x3x3x4xi8>
// CHECK-NEXT: %[[T2W:.*]] = fixed.constant {{.*}} : tensor<3x2x2x1xi8>
// CHECK-NEXT: %[[T2:.*]] = npu.conv %[[X]], %[[T2W]], %[[B]] {{{.*}}pads = array<i64: 0, 0, 1, 0>{{.*}} -> tensor<1x3x3x4xi8>
// CHECK-NEXT: %[[T3W:.*]] = fixed.constant {{.*}} : tensor<3x2x2x2xi8>
// CHECK-NEXT: %[[T3:.*]] = npu.conv %[[X]], %[[T3W]], %[[B]] {{{.*}}pads = array<i64: 0, 0, 1, 1>{{.*}} -> tensor<1x3x3x4xi8>
// CHECK-NEXT: npu.interleave %[[T0]], %[[T1]], %[[T2]], %[[T3]] {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : ({{.*}}) -> tensor<1x3x6x8xi8> loc("deconv")
