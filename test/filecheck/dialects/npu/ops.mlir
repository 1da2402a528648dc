// RUN: %roundtrip
// Every npu op prints, parses and prints the same (docs/npu.md describes each one).

// CHECK-LABEL: func.func @units
func.func @units(%x: tensor<1x2x4x4xi8>, %v: tensor<1x8xi8>) -> (tensor<1x3x4x4xi8>, tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>, tensor<1x4xi8>) {
  %w = fixed.constant dense<1> : tensor<3x2x3x3xi8>
  %b = fixed.constant dense<[1, 2, 3]> : tensor<3xi32>
  // CHECK: %y = npu.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384, 20000, 30000>, shift = array<i64: 18, 18, 19>, relu} : (tensor<1x2x4x4xi8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x4x4xi8>
  %y = npu.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384, 20000, 30000>, shift = array<i64: 18, 18, 19>, relu} : (tensor<1x2x4x4xi8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x4x4xi8>
  // CHECK-NEXT: %z = npu.eltwise "add" %y, %y {multiplier = 16384 : i64, shift = 15 : i64, lhs_multiplier = 16384 : i64, lhs_shift = 14 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 14 : i64, pre_shift = 1 : i64, clamp = array<i64: -5, 50>} : (tensor<1x3x4x4xi8>, tensor<1x3x4x4xi8>) -> tensor<1x3x4x4xi8>
  %z = npu.eltwise "add" %y, %y {multiplier = 16384 : i64, shift = 15 : i64, lhs_multiplier = 16384 : i64, lhs_shift = 14 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 14 : i64, pre_shift = 1 : i64, clamp = array<i64: -5, 50>} : (tensor<1x3x4x4xi8>, tensor<1x3x4x4xi8>) -> tensor<1x3x4x4xi8>
  // CHECK-NEXT: %s = npu.pool "global_avg" %z {multiplier = array<i64: 16384>, shift = array<i64: 18>} : tensor<1x3x4x4xi8> -> tensor<1x3x1x1xi8>
  %s = npu.pool "global_avg" %z {multiplier = array<i64: 16384>, shift = array<i64: 18>} : tensor<1x3x4x4xi8> -> tensor<1x3x1x1xi8>
  // CHECK-NEXT: %m = npu.eltwise "mul" %z, %s {multiplier = 16597 : i64, shift = 20 : i64} : (tensor<1x3x4x4xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x4x4xi8>
  %m = npu.eltwise "mul" %z, %s {multiplier = 16597 : i64, shift = 20 : i64} : (tensor<1x3x4x4xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x4x4xi8>
  // CHECK-NEXT: %p = npu.pool "max" %m {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x3x4x4xi8> -> tensor<1x3x2x2xi8>
  %p = npu.pool "max" %m {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x3x4x4xi8> -> tensor<1x3x2x2xi8>
  // CHECK-NEXT: %a = npu.pool "avg" %p {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, ceil_mode = 1 : i64, multiplier = array<i64: 16384, 21845, 21845, 16384>, shift = array<i64: 16, 16, 16, 15>} : tensor<1x3x2x2xi8> -> tensor<1x3x2x2xi8>
  %a = npu.pool "avg" %p {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, ceil_mode = 1 : i64, multiplier = array<i64: 16384, 21845, 21845, 16384>, shift = array<i64: 16, 16, 16, 15>} : tensor<1x3x2x2xi8> -> tensor<1x3x2x2xi8>
  // CHECK-NEXT: %c = npu.clamp %a {min = -64 : i64, max = 64 : i64} : tensor<1x3x2x2xi8> -> tensor<1x3x2x2xi8>
  %c = npu.clamp %a {min = -64 : i64, max = 64 : i64} : tensor<1x3x2x2xi8> -> tensor<1x3x2x2xi8>
  // CHECK-NEXT: %wf = fixed.constant dense<2> : tensor<4x8xi8>
  %wf = fixed.constant dense<2> : tensor<4x8xi8>
  // CHECK-NEXT: %fc = npu.conv %v, %wf {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x8xi8>, tensor<4x8xi8>) -> tensor<1x4xi8>
  %fc = npu.conv %v, %wf {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x8xi8>, tensor<4x8xi8>) -> tensor<1x4xi8>
  func.return %y, %c, %s, %fc : tensor<1x3x4x4xi8>, tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>, tensor<1x4xi8>
}

// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<1x2x2x2xi8>, %y: tensor<1x3x2x2xi8>) -> (tensor<1x8xi8>, tensor<1x2x2x5xi8>, tensor<1x2x2x2xi8>) {
  // CHECK: %r = npu.reshape %x : tensor<1x2x2x2xi8> -> tensor<1x8xi8>
  %r = npu.reshape %x : tensor<1x2x2x2xi8> -> tensor<1x8xi8>
  // CHECK-NEXT: %c = npu.concat %x, %y {axis = 1 : i64} : (tensor<1x2x2x2xi8>, tensor<1x3x2x2xi8>) -> tensor<1x5x2x2xi8>
  %c = npu.concat %x, %y {axis = 1 : i64} : (tensor<1x2x2x2xi8>, tensor<1x3x2x2xi8>) -> tensor<1x5x2x2xi8>
  // CHECK-NEXT: %t = npu.transpose %c {perm = array<i64: 0, 2, 3, 1>} : tensor<1x5x2x2xi8> -> tensor<1x2x2x5xi8>
  %t = npu.transpose %c {perm = array<i64: 0, 2, 3, 1>} : tensor<1x5x2x2xi8> -> tensor<1x2x2x5xi8>
  // CHECK-NEXT: %l = npu.relayout %x "NHWC" : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8>
  %l = npu.relayout %x "NHWC" : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8>
  // CHECK-NEXT: %k = npu.table %l {table = array<i8: -127, -127,
  %k = npu.table %l {table = array<i8: -127, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127>} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8>
  func.return %r, %t, %k : tensor<1x8xi8>, tensor<1x2x2x5xi8>, tensor<1x2x2x2xi8>
}

// CHECK-LABEL: func.func @upsampling
func.func @upsampling(%x: tensor<1x2x3x4xi8>) -> (tensor<1x2x6x8xi8>, tensor<1x2x6x8xi8>) {
  // CHECK: %n = npu.interleave %x, %x, %x, %x {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>) -> tensor<1x2x6x8xi8>
  %n = npu.interleave %x, %x, %x, %x {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>) -> tensor<1x2x6x8xi8>
  // CHECK-NEXT: %p = npu.pad "edge" %x {pads = array<i64: 0, 0, 1, 1>} : tensor<1x2x3x4xi8> -> tensor<1x2x4x5xi8>
  %p = npu.pad "edge" %x {pads = array<i64: 0, 0, 1, 1>} : tensor<1x2x3x4xi8> -> tensor<1x2x4x5xi8>
  // CHECK-NEXT: %c = npu.interleave %p, %p, %p, %p {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 1, 1, 0, 1, 1>}
  %c = npu.interleave %p, %p, %p, %p {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 1, 1, 0, 1, 1>} : (tensor<1x2x4x5xi8>, tensor<1x2x4x5xi8>, tensor<1x2x4x5xi8>, tensor<1x2x4x5xi8>) -> tensor<1x2x6x8xi8>
  func.return %n, %c : tensor<1x2x6x8xi8>, tensor<1x2x6x8xi8>
}
