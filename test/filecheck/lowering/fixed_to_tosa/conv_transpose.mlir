// RUN: xnpu-opt %s --split-input-file -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// R18, 2x2 stride 2 (segnet_like's decoder): one tosa.transpose_conv2d. The C x O x KH x KW
// weight becomes OHWI unflipped (TOSA scatters input pixel (iy, ix) to output
// (iy * 2 + ky, ix * 2 + kx), as ONNX does), the bias an int32 operand.

builtin.module {
  func.func @main(%x: tensor<1x2x2x2xi8>) -> tensor<1x1x4x4xi32> {
    %w = fixed.constant dense<[[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]]> : tensor<2x1x2x2xi8>
    %b = fixed.constant dense<[7]> : tensor<1xi32>
    %0 = fixed.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x2x2xi8>, tensor<2x1x2x2xi8>, tensor<1xi32>) -> tensor<1x1x4x4xi32> loc("up_transposed")
    func.return %0 : tensor<1x1x4x4xi32>
  }
}

// CHECK-LABEL: function_type = (tensor<1x2x2x2xi8>) -> tensor<1x1x4x4xi32>
// CHECK:        %[[NHWC:.*]] = "tosa.transpose"(%{{.*}}) <{perms = array<i32: 0, 2, 3, 1>}>
// CHECK-NEXT:   %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 5], [2, 6]], {{\[\[}}3, 7], [4, 8]]]]> : tensor<1x2x2x2xi8>}>
// CHECK-NEXT:   %[[B:.*]] = "tosa.const"() <{values = dense<7> : tensor<1xi32>}>
// CHECK-NEXT:   %[[Z:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[T:.*]] = "tosa.transpose_conv2d"(%[[NHWC]], %[[W]], %[[B]], %[[Z]], %[[Z]]) <{out_pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>, acc_type = i32}> : (tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x1xi32> loc("up_transposed")
// CHECK-NEXT:   "tosa.transpose"(%[[T]]) <{perms = array<i32: 0, 3, 1, 2>}>

// -----

// Groups and dilation (TOSA has neither): the kernel is dilated with zeros (2x2 at dilation 2
// -> 3x3) and the two groups become one block-diagonal OHWI weight. ONNX's top pad of 1 crops
// the first row and its right pad the last column: a slice from row 1; output_padding 1 at
// the bottom is out_pad bottom 1.

builtin.module {
  func.func @main(%x: tensor<1x2x3x3xi8>) -> tensor<1x2x7x6xi32> {
    %w = fixed.constant dense<[[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]]> : tensor<2x1x2x2xi8>
    %0 = fixed.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 1>, dilations = array<i64: 2, 2>, output_padding = array<i64: 1, 0>, group = 2 : i64} : (tensor<1x2x3x3xi8>, tensor<2x1x2x2xi8>) -> tensor<1x2x7x6xi32> loc("grouped")
    func.return %0 : tensor<1x2x7x6xi32>
  }
}

// CHECK-LABEL: function_type = (tensor<1x2x3x3xi8>) -> tensor<1x2x7x6xi32>
// CHECK:        %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 0], [0, 0], [2, 0]], {{\[\[}}0, 0], [0, 0], [0, 0]], {{\[\[}}3, 0], [0, 0], [4, 0]]], {{\[\[\[}}0, 5], [0, 0], [0, 6]], {{\[\[}}0, 0], [0, 0], [0, 0]], {{\[\[}}0, 7], [0, 0], [0, 8]]]]> : tensor<2x3x3x2xi8>}>
// CHECK:        %[[T:.*]] = "tosa.transpose_conv2d"(%{{.*}}, %[[W]], %{{.*}}, %{{.*}}, %{{.*}}) <{out_pad = array<i64: 0, 1, 0, 0>, stride = array<i64: 2, 2>, acc_type = i32}> : (tensor<1x3x3x2xi8>, tensor<2x3x3x2xi8>, tensor<2xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x8x7x2xi32> loc("grouped")
// CHECK-NEXT:   %[[START:.*]] = "tosa.const_shape"() <{values = dense<[0, 1, 0, 0]> : tensor<4xindex>}>
// CHECK-NEXT:   %[[SIZE:.*]] = "tosa.const_shape"() <{values = dense<[1, 7, 6, 2]> : tensor<4xindex>}>
// CHECK-NEXT:   "tosa.slice"(%[[T]], %[[START]], %[[SIZE]]) : (tensor<1x8x7x2xi32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x7x6x2xi32> loc("grouped")
