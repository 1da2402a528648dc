// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// A transpose that swaps two blocks of axes ([1, C, L] -> [1, L, C]: a 1-D convolution's map
// read as tokens) is no view of its input's bytes; it is the NHWC order of the map
// [1, C, 1, L]: a reshape to that map, its transpose (0, 2, 3, 1) (one DMA relayout), and a
// reshape of those bytes to the result. A transpose that is a view stays one npu.transpose.

builtin.module {
  func.func @main(%a: tensor<1x6x10xf32>) -> (tensor<1x10x6xf32>, tensor<1x1x6x10xf32>) {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x6x10xf32> -> tensor<1x6x10xi8>
    %0 = fixed.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<1x6x10xi8> -> tensor<1x10x6xi8> loc("swap")
    %1 = fixed.dequantize %0 {scale = 0.0078125 : f64} : tensor<1x10x6xi8> -> tensor<1x10x6xf32>
    %2 = fixed.reshape %x : tensor<1x6x10xi8> -> tensor<1x6x1x10xi8>
    %3 = fixed.transpose %2 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x6x1x10xi8> -> tensor<1x1x6x10xi8> loc("view")
    %4 = fixed.dequantize %3 {scale = 0.0078125 : f64} : tensor<1x1x6x10xi8> -> tensor<1x1x6x10xf32>
    func.return %1, %4 : tensor<1x10x6xf32>, tensor<1x1x6x10xf32>
  }
}
// CHECK-NOT:  npu.host
// CHECK:      %[[M:.*]] = npu.reshape %{{.*}} : tensor<1x6x10xi8> -> tensor<1x6x1x10xi8> loc("swap")
// CHECK-NEXT: %[[T:.*]] = npu.transpose %[[M]] {perm = array<i64: 0, 2, 3, 1>} : tensor<1x6x1x10xi8> -> tensor<1x1x10x6xi8> loc("swap")
// CHECK-NEXT: %[[Y:.*]] = npu.reshape %[[T]] : tensor<1x1x10x6xi8> -> tensor<1x10x6xi8> loc("swap")
// CHECK-NEXT: fixed.dequantize %[[Y]]
// CHECK:      npu.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : tensor<1x6x1x10xi8> -> tensor<1x1x6x10xi8> loc("view")
