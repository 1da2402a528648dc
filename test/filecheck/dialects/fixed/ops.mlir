// RUN: %roundtrip
// Every fixed op prints, parses and prints the same (docs/fixed-point.md names the rule each op runs).

// CHECK-LABEL: func.func @conversions
func.func @conversions(%f: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: %q = fixed.quantize %f {scale = 1.250000e-01 : f64} : tensor<2x3xf32> -> tensor<2x3xi8>
  %q = fixed.quantize %f {scale = 0.125 : f64} : tensor<2x3xf32> -> tensor<2x3xi8>
  // CHECK-NEXT: %w = fixed.rescale %q {multiplier = array<i64: 16384>, shift = array<i64: -1>} : tensor<2x3xi8> -> tensor<2x3xi16>
  %w = fixed.rescale %q {multiplier = array<i64: 16384>, shift = array<i64: -1>} : tensor<2x3xi8> -> tensor<2x3xi16>
  // CHECK-NEXT: %c = fixed.rescale %w {multiplier = array<i64: 16384, 24576, 0>, shift = array<i64: 15, 16, 0>, axis = 1 : i64, scale = array<f64: 2.500000e-01, 1.000000e-01, 1.000000e+00>} : tensor<2x3xi16> -> tensor<2x3xi8>
  %c = fixed.rescale %w {multiplier = array<i64: 16384, 24576, 0>, shift = array<i64: 15, 16, 0>, axis = 1 : i64, scale = array<f64: 0.25, 0.1, 1.0>} : tensor<2x3xi16> -> tensor<2x3xi8>
  // CHECK-NEXT: %s = fixed.shift %w {shift = 4 : i64, rounding = 1 : i64} : tensor<2x3xi16> -> tensor<2x3xi8>
  %s = fixed.shift %w {shift = 4 : i64, rounding = 1 : i64} : tensor<2x3xi16> -> tensor<2x3xi8>
  // CHECK-NEXT: %k = fixed.clamp %s {min = 0 : i64, max = 100 : i64} : tensor<2x3xi8> -> tensor<2x3xi8>
  %k = fixed.clamp %s {min = 0 : i64, max = 100 : i64} : tensor<2x3xi8> -> tensor<2x3xi8>
  // CHECK-NEXT: %t = fixed.table %k {table = array<i8: -127, -127, -126, -125, -124, -123
  %t = fixed.table %k {table = array<i8: -127, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127>} : tensor<2x3xi8> -> tensor<2x3xi8>
  // CHECK: %d = fixed.dequantize %t {scale = 1.250000e-01 : f64} : tensor<2x3xi8> -> tensor<2x3xf32>
  %d = fixed.dequantize %t {scale = 0.125 : f64} : tensor<2x3xi8> -> tensor<2x3xf32>
  // CHECK-NEXT: %pc = fixed.dequantize %c {scale = array<f64: 1.000000e+00, 2.000000e+00, 3.000000e+00>, axis = 1 : i64} : tensor<2x3xi8> -> tensor<2x3xf32>
  %pc = fixed.dequantize %c {scale = array<f64: 1.0, 2.0, 3.0>, axis = 1 : i64} : tensor<2x3xi8> -> tensor<2x3xf32>
  func.return %d : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<1x3x2x2xi8>, %b: tensor<1x3x1x1xi8>) -> (tensor<1x3x2x2xi24>, tensor<1x3x2x2xi24>, tensor<1x3x2x2xi16>) {
  // CHECK: %sum = fixed.add %a, %b {lhs_multiplier = 22668 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64} : (tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x2x2xi24>
  %sum = fixed.add %a, %b {lhs_multiplier = 22668 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64} : (tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x2x2xi24>
  // CHECK-NEXT: %diff = fixed.sub %a, %b {lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 0 : i64, rhs_shift = 0 : i64} : (tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x2x2xi24>
  %diff = fixed.sub %a, %b {lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 0 : i64, rhs_shift = 0 : i64} : (tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x2x2xi24>
  // CHECK-NEXT: %prod = fixed.mul %a, %b {scale = 1.000000e-03 : f64} : (tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x2x2xi16>
  %prod = fixed.mul %a, %b {scale = 1.0e-3 : f64} : (tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x2x2xi16>
  func.return %sum, %diff, %prod : tensor<1x3x2x2xi24>, tensor<1x3x2x2xi24>, tensor<1x3x2x2xi16>
}

// CHECK-LABEL: func.func @layers
func.func @layers(%x: tensor<1x2x4x4xi8>) -> (tensor<1x4x2x2xi32>, tensor<1x3xi32>, tensor<1x2x2x2xi8>, tensor<1x2x4x4xi8>, tensor<1x2x1x1xi32>) {
  // CHECK: %w = fixed.constant dense<{{\[\[\[\[}}1, -1, 1], [-1, 1, -1], [1, -1, 1]]], {{.*}}]]]]> : tensor<4x1x3x3xi8>
  %w = fixed.constant dense<"0x01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF01FF"> : tensor<4x1x3x3xi8>
  // CHECK-NEXT: %b = fixed.constant dense<[1, -2, 3, -4]> : tensor<4xi32>
  %b = fixed.constant dense<[1, -2, 3, -4]> : tensor<4xi32>
  // CHECK-NEXT: %acc = fixed.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x4x4xi8>, tensor<4x1x3x3xi8>, tensor<4xi32>) -> tensor<1x4x2x2xi32>
  %acc = fixed.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x4x4xi8>, tensor<4x1x3x3xi8>, tensor<4xi32>) -> tensor<1x4x2x2xi32>
  // CHECK-NEXT: %nobias = fixed.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x4x4xi8>, tensor<4x1x3x3xi8>) -> tensor<1x4x2x2xi32>
  %nobias = fixed.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x4x4xi8>, tensor<4x1x3x3xi8>) -> tensor<1x4x2x2xi32>
  // CHECK-NEXT: %flat = fixed.flatten %x {axis = 1 : i64} : tensor<1x2x4x4xi8> -> tensor<1x32xi8>
  %flat = fixed.flatten %x {axis = 1 : i64} : tensor<1x2x4x4xi8> -> tensor<1x32xi8>
  // CHECK-NEXT: %fw = fixed.constant dense<-7> : tensor<3x32xi8>
  %fw = fixed.constant dense<-7> : tensor<3x32xi8>
  // CHECK-NEXT: %fb = fixed.constant dense<[100, 200, 300]> : tensor<3xi32>
  %fb = fixed.constant dense<[100, 200, 300]> : tensor<3xi32>
  // CHECK-NEXT: %fc = fixed.gemm %flat, %fw, %fb {trans_b = 1 : i64} : (tensor<1x32xi8>, tensor<3x32xi8>, tensor<3xi32>) -> tensor<1x3xi32>
  %fc = fixed.gemm %flat, %fw, %fb {trans_b = 1 : i64} : (tensor<1x32xi8>, tensor<3x32xi8>, tensor<3xi32>) -> tensor<1x3xi32>
  // CHECK-NEXT: %mp = fixed.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8>
  %mp = fixed.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8>
  // CHECK-NEXT: %ap = fixed.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, multiplier = array<i64: 16384, 21845, 21845, 16384, 21845, 29127, 29127, 21845, 21845, 29127, 29127, 21845, 16384, 21845, 21845, 16384>, shift = array<i64: 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16>} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8>
  %ap = fixed.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, multiplier = array<i64: 16384, 21845, 21845, 16384, 21845, 29127, 29127, 21845, 21845, 29127, 29127, 21845, 16384, 21845, 21845, 16384>, shift = array<i64: 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16>} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8>
  // CHECK-NEXT: %gap = fixed.global_avg_pool %x : tensor<1x2x4x4xi8> -> tensor<1x2x1x1xi32>
  %gap = fixed.global_avg_pool %x : tensor<1x2x4x4xi8> -> tensor<1x2x1x1xi32>
  func.return %acc, %fc, %mp, %ap, %gap : tensor<1x4x2x2xi32>, tensor<1x3xi32>, tensor<1x2x2x2xi8>, tensor<1x2x4x4xi8>, tensor<1x2x1x1xi32>
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<1x2x3xi8>, %y: tensor<1x4x3xi8>) -> (tensor<6x1xi8>, tensor<3x2x1xi8>, tensor<1x6x3xi8>) {
  // CHECK: %r = fixed.reshape %x : tensor<1x2x3xi8> -> tensor<6x1xi8>
  %r = fixed.reshape %x : tensor<1x2x3xi8> -> tensor<6x1xi8>
  // CHECK-NEXT: %t = fixed.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<1x2x3xi8> -> tensor<3x2x1xi8>
  %t = fixed.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<1x2x3xi8> -> tensor<3x2x1xi8>
  // CHECK-NEXT: %c = fixed.concat %x, %y {axis = 1 : i64} : (tensor<1x2x3xi8>, tensor<1x4x3xi8>) -> tensor<1x6x3xi8>
  %c = fixed.concat %x, %y {axis = 1 : i64} : (tensor<1x2x3xi8>, tensor<1x4x3xi8>) -> tensor<1x6x3xi8>
  func.return %r, %t, %c : tensor<6x1xi8>, tensor<3x2x1xi8>, tensor<1x6x3xi8>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2x2xi24>, tensor<i16>, tensor<3xi24>, tensor<2x60xi8>) {
  // CHECK: %a = fixed.constant dense<{{\[\[}}-8388608, 0], [1, 8388607]]> : tensor<2x2xi24>
  %a = fixed.constant dense<[[-8388608, 0], [1, 8388607]]> : tensor<2x2xi24>
  // CHECK-NEXT: %b = fixed.constant dense<-32767> : tensor<i16>
  %b = fixed.constant dense<-32767> : tensor<i16>
  // CHECK-NEXT: %c = fixed.constant dense<[1, 2, 3]> : tensor<3xi24> {origin = "bias"}
  %c = fixed.constant dense<[1, 2, 3]> : tensor<3xi24> {origin = "bias"}
  // Large constants print as a hex blob of xDSL's byte layout.
  // CHECK-NEXT: %big = fixed.constant dense<"0x81A6CBF0153A5F85AACFF4193E6389AED3F81D42678DB2D7FC21466B91B6DB00254A6F95BADF04294E7399BEE3082D52779DC2E70C31567BA1C6EB10355A7FA5CAEF14395E84A9CEF3183D6288ADD2F71C41668CB1D6FB20456A90B5DAFF24496E94B9DE03284D7298BDE2072C51769CC1E60B30557AA0C5"> : tensor<2x60xi8>
  %big = fixed.constant dense<"0x81A6CBF0153A5F85AACFF4193E6389AED3F81D42678DB2D7FC21466B91B6DB00254A6F95BADF04294E7399BEE3082D52779DC2E70C31567BA1C6EB10355A7FA5CAEF14395E84A9CEF3183D6288ADD2F71C41668CB1D6FB20456A90B5DAFF24496E94B9DE03284D7298BDE2072C51769CC1E60B30557AA0C5"> : tensor<2x60xi8>
  func.return %a, %b, %c, %big : tensor<2x2xi24>, tensor<i16>, tensor<3xi24>, tensor<2x60xi8>
}

// CHECK-LABEL: func.func @upsampling
func.func @upsampling(%x: tensor<1x2x2x3xi8>, %w: tensor<2x3x2x2xi8>, %b: tensor<3xi32>) -> (tensor<1x3x4x6xi32>, tensor<1x2x4x6xi8>, tensor<1x2x4x6xi32>) {
  // CHECK: %ct = fixed.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x2x3xi8>, tensor<2x3x2x2xi8>, tensor<3xi32>) -> tensor<1x3x4x6xi32>
  %ct = fixed.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x2x3xi8>, tensor<2x3x2x2xi8>, tensor<3xi32>) -> tensor<1x3x4x6xi32>
  // CHECK-NEXT: %up = fixed.resize %x {rows = array<i64: 0, 0, 1, 1>, cols = array<i64: 0, 0, 1, 1, 2, 2>, scale = 5.000000e-01 : f64} : tensor<1x2x2x3xi8> -> tensor<1x2x4x6xi8>
  %up = fixed.resize %x {rows = array<i64: 0, 0, 1, 1>, cols = array<i64: 0, 0, 1, 1, 2, 2>, scale = 0.5 : f64} : tensor<1x2x2x3xi8> -> tensor<1x2x4x6xi8>
  // CHECK-NEXT: %lin = fixed.resize_linear %x {rows = array<i64: 0, 1, 0, 1, 0, 1, 1, 1>, row_weights = array<i64: 4, 0, 3, 1, 1, 3, 4, 0>, cols = array<i64: 0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2>, col_weights = array<i64: 4, 0, 3, 1, 1, 3, 3, 1, 1, 3, 4, 0>} : tensor<1x2x2x3xi8> -> tensor<1x2x4x6xi32>
  %lin = fixed.resize_linear %x {rows = array<i64: 0, 1, 0, 1, 0, 1, 1, 1>, row_weights = array<i64: 4, 0, 3, 1, 1, 3, 4, 0>, cols = array<i64: 0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2>, col_weights = array<i64: 4, 0, 3, 1, 1, 3, 3, 1, 1, 3, 4, 0>} : tensor<1x2x2x3xi8> -> tensor<1x2x4x6xi32>
  func.return %ct, %up, %lin : tensor<1x3x4x6xi32>, tensor<1x2x4x6xi8>, tensor<1x2x4x6xi32>
}
