// RUN: xnpu-opt %s --split-input-file -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// R16, nearest x2 (rows floor(o / 2)): one tosa.resize NEAREST_NEIGHBOR. With scale 4 / 2 and
// offset -2, output row o reads y = 2o - 2 in quarters: floor(y / 4) + (2 (y mod 4) >= 4) is
// floor(o / 2), the op's source row; border (OH - 1) * 2 - 2 - (IH - 1) * 4 = 0.

builtin.module {
  func.func @main(%x: tensor<1x2x2x3xi8>) -> tensor<1x2x4x6xi8> {
    %0 = fixed.resize %x {rows = array<i64: 0, 0, 1, 1>, cols = array<i64: 0, 0, 1, 1, 2, 2>} : tensor<1x2x2x3xi8> -> tensor<1x2x4x6xi8> loc("up_nearest")
    func.return %0 : tensor<1x2x4x6xi8>
  }
}

// CHECK-LABEL: function_type = (tensor<1x2x2x3xi8>) -> tensor<1x2x4x6xi8>
// CHECK:        %[[NHWC:.*]] = "tosa.transpose"(%{{.*}}) <{perms = array<i32: 0, 2, 3, 1>}>
// CHECK-NEXT:   %[[SCALE:.*]] = "tosa.const_shape"() <{values = dense<[4, 2, 4, 2]> : tensor<4xindex>}>
// CHECK-NEXT:   %[[OFFSET:.*]] = "tosa.const_shape"() <{values = dense<-2> : tensor<2xindex>}>
// CHECK-NEXT:   %[[BORDER:.*]] = "tosa.const_shape"() <{values = dense<0> : tensor<2xindex>}>
// CHECK-NEXT:   %[[R:.*]] = "tosa.resize"(%[[NHWC]], %[[SCALE]], %[[OFFSET]], %[[BORDER]]) <{mode = #tosa.resize_mode<NEAREST_NEIGHBOR>}> : (tensor<1x2x3x2xi8>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x4x6x2xi8> loc("up_nearest")
// CHECK-NEXT:   "tosa.transpose"(%[[R]]) <{perms = array<i32: 0, 3, 1, 2>}>
// CHECK-NOT:    tosa.gather

// -----

// Source rows no TOSA scale and offset pick (reversed, repeated): one tosa.gather per axis,
// the gathered axis second (N x size x rest).

builtin.module {
  func.func @main(%x: tensor<1x2x3x3xi8>) -> tensor<1x2x2x2xi8> {
    %0 = fixed.resize %x {rows = array<i64: 2, 0>, cols = array<i64: 1, 1>} : tensor<1x2x3x3xi8> -> tensor<1x2x2x2xi8> loc("shuffle")
    func.return %0 : tensor<1x2x2x2xi8>
  }
}

// CHECK-LABEL: function_type = (tensor<1x2x3x3xi8>) -> tensor<1x2x2x2xi8>
// CHECK-NOT:    tosa.resize
// CHECK:        %[[ROWS:.*]] = "tosa.const"() <{values = dense<{{\[\[}}2, 0]]> : tensor<1x2xi32>}>
// CHECK-NEXT:   "tosa.gather"(%{{.*}}, %[[ROWS]]) : (tensor<1x3x6xi8>, tensor<1x2xi32>) -> tensor<1x2x6xi8>
// CHECK:        %[[COLS:.*]] = "tosa.const"() <{values = dense<1> : tensor<1x2xi32>}>
// CHECK-NEXT:   "tosa.gather"(%{{.*}}, %[[COLS]]) : (tensor<1x3x4xi8>, tensor<1x2xi32>) -> tensor<1x2x4xi8>
// CHECK-NOT:    tosa.resize

// -----

// R17, linear x2 half_pixel (weights 4 0, 3 1, 1 3, 4 0 over D = 4): tosa.resize BILINEAR
// int8 -> int32 with scale_n = D = 4, whose unnormalised weights (4 - r, r) are the op's, so
// the int32 sums are the op's exactly: offset -1 (y = 2o - 1 quarters), border 1.

builtin.module {
  func.func @main(%x: tensor<1x1x2x2xi8>) -> tensor<1x1x4x4xi32> {
    %0 = fixed.resize_linear %x {rows = array<i64: 0, 0, 0, 1, 0, 1, 1, 1>, row_weights = array<i64: 4, 0, 3, 1, 1, 3, 4, 0>, cols = array<i64: 0, 0, 0, 1, 0, 1, 1, 1>, col_weights = array<i64: 4, 0, 3, 1, 1, 3, 4, 0>} : tensor<1x1x2x2xi8> -> tensor<1x1x4x4xi32> loc("up_linear")
    func.return %0 : tensor<1x1x4x4xi32>
  }
}

// CHECK-LABEL: function_type = (tensor<1x1x2x2xi8>) -> tensor<1x1x4x4xi32>
// CHECK:        %[[SCALE:.*]] = "tosa.const_shape"() <{values = dense<[4, 2, 4, 2]> : tensor<4xindex>}>
// CHECK-NEXT:   %[[OFFSET:.*]] = "tosa.const_shape"() <{values = dense<-1> : tensor<2xindex>}>
// CHECK-NEXT:   %[[BORDER:.*]] = "tosa.const_shape"() <{values = dense<1> : tensor<2xindex>}>
// CHECK-NEXT:   "tosa.resize"(%{{.*}}, %[[SCALE]], %[[OFFSET]], %[[BORDER]]) <{mode = #tosa.resize_mode<BILINEAR>}> : (tensor<1x2x2x1xi8>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x4x4x1xi32> loc("up_linear")

// -----

// Taps that are no TOSA resize (weights 5 2 over D = 7): per axis a gather of both taps, the
// int32 products with the weights and their sum over the pair.

builtin.module {
  func.func @main(%x: tensor<1x1x2x2xi8>) -> tensor<1x1x2x2xi32> {
    %0 = fixed.resize_linear %x {rows = array<i64: 1, 0, 0, 1>, row_weights = array<i64: 5, 2, 6, 1>, cols = array<i64: 0, 1, 0, 1>, col_weights = array<i64: 1, 1, 2, 0>} : tensor<1x1x2x2xi8> -> tensor<1x1x2x2xi32> loc("taps")
    func.return %0 : tensor<1x1x2x2xi32>
  }
}

// CHECK-LABEL: function_type = (tensor<1x1x2x2xi8>) -> tensor<1x1x2x2xi32>
// CHECK-NOT:    tosa.resize
// CHECK:        %[[ROWS:.*]] = "tosa.const"() <{values = dense<{{\[\[}}1, 0, 0, 1]]> : tensor<1x4xi32>}>
// CHECK-NEXT:   %[[PICKED:.*]] = "tosa.gather"(%{{.*}}, %[[ROWS]]) : (tensor<1x2x2xi8>, tensor<1x4xi32>) -> tensor<1x4x2xi8>
// CHECK-NEXT:   %[[WIDE:.*]] = "tosa.cast"(%[[PICKED]]) : (tensor<1x4x2xi8>) -> tensor<1x4x2xi32>
// CHECK-NEXT:   "tosa.const_shape"
// CHECK-NEXT:   %[[PAIRS:.*]] = "tosa.reshape"(%[[WIDE]], %{{.*}}) : (tensor<1x4x2xi32>, !tosa.shape<4>) -> tensor<1x2x2x2xi32>
// CHECK-NEXT:   %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}5], [2]], {{\[\[}}6], [1]]]]> : tensor<1x2x2x1xi32>}>
// CHECK-NEXT:   "tosa.const"
// CHECK-NEXT:   %[[P:.*]] = "tosa.mul"(%[[PAIRS]], %[[W]], %{{.*}}) : (tensor<1x2x2x2xi32>, tensor<1x2x2x1xi32>, tensor<1xi8>) -> tensor<1x2x2x2xi32>
// CHECK-NEXT:   "tosa.reduce_sum"(%[[P]]) <{axis = 2 : i32}> : (tensor<1x2x2x2xi32>) -> tensor<1x2x1x2xi32>
// CHECK:        "tosa.gather"(%{{.*}}, %{{.*}}) : (tensor<1x2x2xi32>, tensor<1x4xi32>) -> tensor<1x4x2xi32>
// CHECK:        "tosa.const"() <{values = dense<{{\[\[\[\[}}1], [1]], {{\[\[}}2], [0]]]]> : tensor<1x2x2x1xi32>}>
// CHECK-NEXT:   "tosa.mul"
// CHECK-NEXT:   "tosa.reduce_sum"
