// RUN: xnpu-opt %s --split-input-file -p npu-sink-tables | filecheck %s

// A table after a nearest x2 upsampling (an interleave of four copies of one conv's result)
// is applied by the conv instead: the conv's relu stays its flag, the table becomes its
// epilogue, and the interleave copies the final values. The conv's location names both.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x2x8x8xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi8>
    %w = fixed.constant dense<1> : tensor<2x2x1x1xi8>
    %c = npu.conv %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>, relu} : (tensor<1x2x4x4xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x4x4xi8> loc("conv")
    %u = npu.interleave %c, %c, %c, %c {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>) -> tensor<1x2x8x8xi8> loc("up")
    %t = npu.table %u {table = array<i8: -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127>} : tensor<1x2x8x8xi8> -> tensor<1x2x8x8xi8> loc("rescale")
    %y = fixed.dequantize %t {scale = 0.5 : f64} : tensor<1x2x8x8xi8> -> tensor<1x2x8x8xf32>
    func.return %y : tensor<1x2x8x8xf32>
  }
}

// CHECK:      %c = npu.conv %0, %w {{{.*}}relu, table = array<i8: -127, -126, -125,{{.*}}>} : {{.*}} loc(fused["conv", "rescale"])
// CHECK-NEXT: %u = npu.interleave %c, %c, %c, %c
// CHECK-NOT:  npu.table
// CHECK:      fixed.dequantize %u

// -----

// A conv with a clamp epilogue, read only by an edge pad: its epilogue becomes the table of the
// clamp then the table (codes up to -2 give the table's entry for -2, -2; from 3 on, its
// entry for 3, 12).

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x1x2x2xf32> {nn.name = "x"}) -> (tensor<1x1x4x4xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xi8>
    %w = fixed.constant dense<1> : tensor<1x1x1x1xi8>
    %c = npu.conv %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 14>, clamp = array<i64: -2, 3>} : (tensor<1x1x2x2xi8>, tensor<1x1x1x1xi8>) -> tensor<1x1x2x2xi8> loc("conv")
    %u = npu.pad "edge" %c {pads = array<i64: 1, 1, 1, 1>} : tensor<1x1x2x2xi8> -> tensor<1x1x4x4xi8> loc("pad")
    %t = npu.table %u {table = array<i8: -127, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127>} : tensor<1x1x4x4xi8> -> tensor<1x1x4x4xi8> loc("shift")
    %y = fixed.dequantize %t {scale = 0.5 : f64} : tensor<1x1x4x4xi8> -> tensor<1x1x4x4xf32>
    func.return %y : tensor<1x1x4x4xf32>
  }
}

// CHECK:      %c = npu.conv %0, %w {{{.*}}shift = array<i64: 14>, table = array<i8: -2, -2, -2,{{.*}}, 12, 12, 12>} : {{.*}} loc(fused["conv", "shift"])
// CHECK-NOT:  npu.table

// -----

// A conv whose result another layer reads too keeps its epilogue; the table stays.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x1x2x2xf32> {nn.name = "x"}) -> (tensor<1x1x4x4xf32> {nn.name = "y"}, tensor<1x1x2x2xf32> {nn.name = "z"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xi8>
    %w = fixed.constant dense<1> : tensor<1x1x1x1xi8>
    %c = npu.conv %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 14>, clamp = array<i64: -2, 3>} : (tensor<1x1x2x2xi8>, tensor<1x1x1x1xi8>) -> tensor<1x1x2x2xi8> loc("conv")
    %u = npu.pad "edge" %c {pads = array<i64: 1, 1, 1, 1>} : tensor<1x1x2x2xi8> -> tensor<1x1x4x4xi8> loc("pad")
    %t = npu.table %u {table = array<i8: -127, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 127, 127, 127, 127, 127, 127, 127, 127, 127>} : tensor<1x1x4x4xi8> -> tensor<1x1x4x4xi8> loc("shift")
    %d = npu.conv %c, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 14>} : (tensor<1x1x2x2xi8>, tensor<1x1x1x1xi8>) -> tensor<1x1x2x2xi8> loc("other")
    %y = fixed.dequantize %t {scale = 0.5 : f64} : tensor<1x1x4x4xi8> -> tensor<1x1x4x4xf32>
    %z = fixed.dequantize %d {scale = 0.5 : f64} : tensor<1x1x2x2xi8> -> tensor<1x1x2x2xf32>
    func.return %y, %z : tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>
  }
}

// CHECK:      %c = npu.conv %0, %w {{{.*}}clamp = array<i64: -2, 3>}
// CHECK:      %t = npu.table %u
