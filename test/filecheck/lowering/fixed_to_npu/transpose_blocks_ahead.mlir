// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// A transpose swapping two blocks of axes ahead of one it keeps last ([1, H, T, D] ->
// [1, T, H, D]: attention heads, H = 2, T = 3, D = 4) is DMA work: the input as the NHWC map
// of 2 rows of 3 pixels of 4 channels (a row-major map transposed (0, 3, 1, 2) is a view),
// its 2 rows interleaved as phases into one row of 6 pixels (row a from offset (a, 0) into
// columns a, a + 2, ...), whose row-major view is the result.

builtin.module {
  func.func @main(%a: tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xi8>
    %0 = fixed.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x3x4xi8> -> tensor<1x3x2x4xi8> loc("heads")
    %1 = fixed.dequantize %0 {scale = 0.0078125 : f64} : tensor<1x3x2x4xi8> -> tensor<1x3x2x4xf32>
    func.return %1 : tensor<1x3x2x4xf32>
  }
}
// CHECK-NOT:  npu.host
// CHECK:      %[[M:.*]] = npu.reshape %{{.*}} : tensor<1x2x3x4xi8> -> tensor<1x2x3x4xi8> loc("heads")
// CHECK-NEXT: %[[N:.*]] = npu.transpose %[[M]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x2x3x4xi8> -> tensor<1x4x2x3xi8> loc("heads")
// CHECK-NEXT: %[[I:.*]] = npu.interleave %[[N]], %[[N]] {factors = array<i64: 1, 2>, offsets = array<i64: 0, 0, 1, 0>} : (tensor<1x4x2x3xi8>, tensor<1x4x2x3xi8>) -> tensor<1x4x1x6xi8> loc("heads")
// CHECK-NEXT: %[[R:.*]] = npu.transpose %[[I]] {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x1x6xi8> -> tensor<1x1x6x4xi8> loc("heads")
// CHECK-NEXT: %[[Y:.*]] = npu.reshape %[[R]] : tensor<1x1x6x4xi8> -> tensor<1x3x2x4xi8> loc("heads")
// CHECK-NEXT: fixed.dequantize %[[Y]]
