// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s
// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_lite}' | filecheck %s --check-prefix=LITE

// activation.mlir: a clamp to the saturation range [-127, 127] disappears; a relu after a
// max pool (no relu flag) is its CLAMP epilogue on xnpu_default and its exact TABLE epilogue
// on xnpu_lite (no clamp unit); a table after a CONV is its TABLE epilogue; a clamp on a
// program input is a CLAMP (a TABLE on xnpu_lite); an int8 -> int8 rescale is a TABLE.

builtin.module {
  func.func @main(%a: tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi8>
    %0 = fixed.clamp %x {min = -127 : i64, max = 127 : i64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8> loc("whole_range")
    %1 = fixed.max_pool %0 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8> loc("pool")
    %2 = fixed.clamp %1 {min = 0 : i64, max = 127 : i64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8> loc("relu")
    %3 = fixed.clamp %x {min = -3 : i64, max = 100 : i64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8> loc("clip")
    %4 = fixed.rescale %3 {multiplier = array<i64: 16384>, shift = array<i64: 15>} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8> loc("requantize")
    %w = fixed.constant dense<1> : tensor<2x1x1x1xi8>
    %5 = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x4x4xi8>, tensor<2x1x1x1xi8>) -> tensor<1x2x4x4xi32> loc("conv")
    %6 = fixed.rescale %5 {multiplier = array<i64: 16384>, shift = array<i64: 14>} : tensor<1x2x4x4xi32> -> tensor<1x2x4x4xi8> loc("conv")
    %7 = fixed.table %6 {table = array<i8: -127, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127>} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8> loc("table")
    %8 = fixed.dequantize %2 {scale = 0.0625 : f64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xf32>
    %9 = fixed.dequantize %4 {scale = 0.0625 : f64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xf32>
    %10 = fixed.dequantize %7 {scale = 0.0625 : f64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xf32>
    func.return %8, %9, %10 : tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  }
}

// CHECK:      %[[X:.*]] = fixed.quantize
// CHECK-NEXT: %[[P:.*]] = npu.pool "max" %[[X]] {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, clamp = array<i64: 0, 127>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8> loc(fused["pool", "relu"])
// CHECK-NEXT: %[[C:.*]] = npu.clamp %[[X]] {min = -3 : i64, max = 100 : i64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8> loc("clip")
// CHECK-NEXT: npu.table %[[C]] {table = array<i8: -64, -63, -63, -62,{{.*}}, 63, 63, 64>} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8> loc("requantize")
// CHECK:      npu.conv %[[X]], %w {{{.*}}group = 2 : i64, multiplier = array<i64: 16384>, shift = array<i64: 14>, table = array<i8: -127, -127, -126,{{.*}}>} : (tensor<1x2x4x4xi8>, tensor<2x1x1x1xi8>) -> tensor<1x2x4x4xi8> loc(fused["conv", "table"])
// CHECK-NOT:  fixed.{{clamp|table|rescale|max_pool}}

// LITE:      %[[X:.*]] = fixed.quantize
// LITE-NEXT: npu.pool "max" %[[X]] {{{.*}}table = array<i8: 0, 0, 0,{{.*}}, 126, 127>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8> loc(fused["pool", "relu"])
// LITE-NEXT: %[[C:.*]] = npu.table %[[X]] {table = array<i8: -3, -3, -3,{{.*}}, 99, 100, 100,{{.*}}>} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8> loc("clip")
// LITE-NEXT: npu.table %[[C]]
// LITE-NOT:  npu.clamp
