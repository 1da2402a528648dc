// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_lite}' | filecheck %s

// What no unit of the target takes is placed on the host, each op with its reason: a 9x9
// kernel on xnpu_lite's 7x7 CONV unit (with the rescale of its int32 sums), and a softmax the
// quantizer left in float (between a dequantize and the return: a float program output).
// The relu between them runs on the accelerator, so the two host ops are two segments, and
// the kernel constant is copied into the first.

builtin.module {
  func.func @main(%a: tensor<1x2x16x16xf32>) -> tensor<1x3x8x8xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x16x16xf32> -> tensor<1x2x16x16xi8>
    %w = fixed.constant dense<1> : tensor<3x2x9x9xi8>
    %0 = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x16x16xi8>, tensor<3x2x9x9xi8>) -> tensor<1x3x8x8xi32> loc("big_kernel")
    %1 = fixed.rescale %0 {multiplier = array<i64: 16384>, shift = array<i64: 20>} : tensor<1x3x8x8xi32> -> tensor<1x3x8x8xi8> loc("big_kernel")
    %2 = fixed.table %1 {table = array<i8: -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, -127, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127>} : tensor<1x3x8x8xi8> -> tensor<1x3x8x8xi8> loc("relu")
    %3 = fixed.dequantize %2 {scale = 0.0625 : f64} : tensor<1x3x8x8xi8> -> tensor<1x3x8x8xf32> loc("prob")
    %4 = nn.softmax %3 {axis = 1 : i64} : tensor<1x3x8x8xf32> -> tensor<1x3x8x8xf32> loc("prob")
    func.return %4 : tensor<1x3x8x8xf32>
  }
}
// CHECK:      %[[X:.*]] = fixed.quantize %a
// CHECK-NEXT: %[[C:.*]] = npu.host(%[[X]]) : (tensor<1x2x16x16xi8>) -> tensor<1x3x8x8xi8> {
// CHECK-NEXT: ^{{.*}}(%[[IN:.*]]: tensor<1x2x16x16xi8>):
// CHECK-NEXT:   %[[W:.*]] = fixed.constant dense<1> : tensor<3x2x9x9xi8>
// CHECK-NEXT:   %[[S:.*]] = fixed.conv2d %[[IN]], %[[W]] {{.*}}npu.host_reason = "kernel 9x9 is outside [1, 7]"{{.*}} loc("big_kernel")
// CHECK-NEXT:   %[[R:.*]] = fixed.rescale %[[S]] {{.*}}npu.host_reason = "a rescale runs in the output stage of the unit producing its input, or on int8 as a TABLE"{{.*}} loc("big_kernel")
// CHECK-NEXT:   npu.host_yield %[[R]] : tensor<1x3x8x8xi8>
// CHECK-NEXT: }
// CHECK-NEXT: %[[T:.*]] = npu.table %[[C]] {{.*}} loc("relu")
// CHECK-NEXT: %[[P:.*]] = npu.host(%[[T]]) : (tensor<1x3x8x8xi8>) -> tensor<1x3x8x8xf32> {
// CHECK-NEXT: ^{{.*}}(%[[IN2:.*]]: tensor<1x3x8x8xi8>):
// CHECK-NEXT:   %[[F:.*]] = fixed.dequantize %[[IN2]] {scale = 6.250000e-02 : f64} : tensor<1x3x8x8xi8> -> tensor<1x3x8x8xf32> loc("prob")
// CHECK-NEXT:   %[[Y:.*]] = nn.softmax %[[F]] {{.*}}npu.host_reason = "'nn.softmax' has no fixed-point lowering (it runs in float)"{{.*}} loc("prob")
// CHECK-NEXT:   npu.host_yield %[[Y]] : tensor<1x3x8x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[P]] : tensor<1x3x8x8xf32>
