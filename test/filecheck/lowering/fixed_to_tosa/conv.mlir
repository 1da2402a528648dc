// RUN: xnpu-opt %s --split-input-file -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// R13: the NCHW input is transposed to NHWC once, OIHW weights become OHWI constants, the
// accumulator is int32. TOSA wants the padded extent to be an exact multiple of the stride:
// a 5-wide input, 2x2 kernel, stride 2 gives 3 outputs with padding 1 before and 0 after
// (ONNX's padding of 1 after is never read). The result goes back to NCHW for the return.

builtin.module {
  func.func @main(%x: tensor<1x2x5x5xi8>) -> tensor<1x2x3x3xi32> {
    %w = fixed.constant dense<[[[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [[[-1, -2], [-3, -4]], [[-5, -6], [-7, -8]]]]> : tensor<2x2x2x2xi8>
    %b = fixed.constant dense<[100, -100]> : tensor<2xi32>
    %0 = fixed.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x5x5xi8>, tensor<2x2x2x2xi8>, tensor<2xi32>) -> tensor<1x2x3x3xi32> loc("conv")
    func.return %0 : tensor<1x2x3x3xi32>
  }
}

// CHECK-LABEL: function_type = (tensor<1x2x5x5xi8>) -> tensor<1x2x3x3xi32>
// CHECK:      ^bb0(%[[X:.*]]: tensor<1x2x5x5xi8>):
// CHECK-NEXT:   %[[NHWC:.*]] = "tosa.transpose"(%[[X]]) <{perms = array<i32: 0, 2, 3, 1>}> : (tensor<1x2x5x5xi8>) -> tensor<1x5x5x2xi8>
// CHECK-NEXT:   %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 5], [2, 6]], {{\[\[}}3, 7], [4, 8]]], {{\[\[\[}}-1, -5], [-2, -6]], {{\[\[}}-3, -7], [-4, -8]]]]> : tensor<2x2x2x2xi8>}>
// CHECK-NEXT:   %[[B:.*]] = "tosa.const"() <{values = dense<[100, -100]> : tensor<2xi32>}>
// CHECK-NEXT:   %[[Z:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[C:.*]] = "tosa.conv2d"(%[[NHWC]], %[[W]], %[[B]], %[[Z]], %[[Z]]) <{stride = array<i64: 2, 2>, pad = array<i64: 1, 0, 1, 0>, dilation = array<i64: 1, 1>, acc_type = i32}> : (tensor<1x5x5x2xi8>, tensor<2x2x2x2xi8>, tensor<2xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x3x3x2xi32> loc("conv")
// CHECK-NEXT:   %[[OUT:.*]] = "tosa.transpose"(%[[C]]) <{perms = array<i32: 0, 3, 1, 2>}> : (tensor<1x3x3x2xi32>) -> tensor<1x2x3x3xi32>
// CHECK-NEXT:   "func.return"(%[[OUT]])

// -----

// Depthwise (group = channels): weights C*M x 1 x KH x KW become KH x KW x C x M (here M = 2).

builtin.module {
  func.func @main(%x: tensor<1x2x4x4xi8>) -> tensor<1x4x4x4xi32> {
    %w = fixed.constant dense<[[[[1]]], [[[2]]], [[[3]]], [[[4]]]]> : tensor<4x1x1x1xi8>
    %0 = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x4x4xi8>, tensor<4x1x1x1xi8>) -> tensor<1x4x4x4xi32> loc("depthwise")
    func.return %0 : tensor<1x4x4x4xi32>
  }
}

// CHECK-LABEL: function_type = (tensor<1x2x4x4xi8>) -> tensor<1x4x4x4xi32>
// CHECK:        %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 2], [3, 4]]]]> : tensor<1x1x2x2xi8>}>
// CHECK-NEXT:   %[[B:.*]] = "tosa.const"() <{values = dense<0> : tensor<4xi32>}>
// CHECK:        "tosa.depthwise_conv2d"(%{{.*}}, %[[W]], %[[B]], %{{.*}}, %{{.*}}) <{stride = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, acc_type = i32}> : (tensor<1x4x4x2xi8>, tensor<1x1x2x2xi8>, tensor<4xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x4xi32> loc("depthwise")

// -----

// A grouped convolution (TOSA has none): one conv2d per group on a channel slice, then concat.

builtin.module {
  func.func @main(%x: tensor<1x4x3x3xi8>) -> tensor<1x2x3x3xi32> {
    %w = fixed.constant dense<[[[[1]], [[2]]], [[[3]], [[4]]]]> : tensor<2x2x1x1xi8>
    %0 = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x3x3xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x3x3xi32> loc("grouped")
    func.return %0 : tensor<1x2x3x3xi32>
  }
}

// CHECK-LABEL: function_type = (tensor<1x4x3x3xi8>) -> tensor<1x2x3x3xi32>
// CHECK:        %[[X:.*]] = "tosa.transpose"
// CHECK-NEXT:   %[[START0:.*]] = "tosa.const_shape"() <{values = dense<0> : tensor<4xindex>}>
// CHECK-NEXT:   %[[SIZE:.*]] = "tosa.const_shape"() <{values = dense<[1, 3, 3, 2]> : tensor<4xindex>}>
// CHECK-NEXT:   %[[G0:.*]] = "tosa.slice"(%[[X]], %[[START0]], %[[SIZE]]) : (tensor<1x3x3x4xi8>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x3x3x2xi8>
// CHECK-NEXT:   %[[W0:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 2]]]]> : tensor<1x1x1x2xi8>}>
// CHECK:        %[[C0:.*]] = "tosa.conv2d"(%[[G0]], %[[W0]], {{.*}} -> tensor<1x3x3x1xi32>
// CHECK-NEXT:   %[[START1:.*]] = "tosa.const_shape"() <{values = dense<[0, 0, 0, 2]> : tensor<4xindex>}>
// CHECK-NEXT:   %[[G1:.*]] = "tosa.slice"(%[[X]], %[[START1]], %[[SIZE]])
// CHECK-NEXT:   %[[W1:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}3, 4]]]]> : tensor<1x1x1x2xi8>}>
// CHECK-NEXT:   %[[C1:.*]] = "tosa.conv2d"(%[[G1]], %[[W1]], {{.*}} -> tensor<1x3x3x1xi32>
// CHECK-NEXT:   "tosa.concat"(%[[C0]], %[[C1]]) <{axis = 3 : i32}> : (tensor<1x3x3x1xi32>, tensor<1x3x3x1xi32>) -> tensor<1x3x3x2xi32> loc("grouped")
