// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// pool.mlir and data.mlir: average pooling with per-position multipliers, the global
// average's int32 sum and its rescale as one POOL, and the DMA's data movement ops. A
// transpose the DMA has no order for (H and W swapped: neither the NCHW nor the NHWC bytes
// of its input) is placed on the host at selection, with that reason.

builtin.module {
  func.func @main(%a: tensor<1x2x3x3xf32>, %b: tensor<1x1x3x3xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>) {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xi8>
    %y = fixed.quantize %b {scale = 0.0078125 : f64} : tensor<1x1x3x3xf32> -> tensor<1x1x3x3xi8>
    %0 = fixed.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, ceil_mode = 0 : i64, multiplier = array<i64: 16384, 21845, 21845, 16384>, shift = array<i64: 16, 16, 16, 15>} : tensor<1x2x3x3xi8> -> tensor<1x2x2x2xi8> loc("avg")
    %1 = fixed.global_avg_pool %x : tensor<1x2x3x3xi8> -> tensor<1x2x1x1xi32> loc("gap")
    %2 = fixed.rescale %1 {multiplier = array<i64: 29127>, shift = array<i64: 18>} : tensor<1x2x1x1xi32> -> tensor<1x2x1x1xi8> loc("gap")
    %3 = fixed.reshape %2 : tensor<1x2x1x1xi8> -> tensor<1x2xi8> loc("reshape")
    %4 = fixed.concat %x, %y {axis = 1 : i64} : (tensor<1x2x3x3xi8>, tensor<1x1x3x3xi8>) -> tensor<1x3x3x3xi8> loc("concat")
    %5 = fixed.transpose %4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x3x3xi8> -> tensor<1x3x3x3xi8> loc("transpose")
    %9 = fixed.transpose %4 {perm = array<i64: 0, 1, 3, 2>} : tensor<1x3x3x3xi8> -> tensor<1x3x3x3xi8> loc("swap_hw")
    %6 = fixed.dequantize %0 {scale = 0.0625 : f64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xf32>
    %7 = fixed.dequantize %3 {scale = 0.0625 : f64} : tensor<1x2xi8> -> tensor<1x2xf32>
    %8 = fixed.dequantize %5 {scale = 0.0625 : f64} : tensor<1x3x3x3xi8> -> tensor<1x3x3x3xf32>
    %10 = fixed.dequantize %9 {scale = 0.0625 : f64} : tensor<1x3x3x3xi8> -> tensor<1x3x3x3xf32>
    func.return %6, %7, %8, %10 : tensor<1x2x2x2xf32>, tensor<1x2xf32>, tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>
  }
}

// CHECK:      npu.pool "avg" %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, ceil_mode = 0 : i64, multiplier = array<i64: 16384, 21845, 21845, 16384>, shift = array<i64: 16, 16, 16, 15>} : tensor<1x2x3x3xi8> -> tensor<1x2x2x2xi8> loc("avg")
// CHECK-NEXT: %[[G:.*]] = npu.pool "global_avg" %x {multiplier = array<i64: 29127>, shift = array<i64: 18>} : tensor<1x2x3x3xi8> -> tensor<1x2x1x1xi8> loc("gap")
// CHECK-NEXT: npu.reshape %[[G]] : tensor<1x2x1x1xi8> -> tensor<1x2xi8> loc("reshape")
// CHECK-NEXT: %[[C:.*]] = npu.concat %x, %y {axis = 1 : i64} : (tensor<1x2x3x3xi8>, tensor<1x1x3x3xi8>) -> tensor<1x3x3x3xi8> loc("concat")
// CHECK-NEXT: npu.transpose %[[C]] {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x3x3xi8> -> tensor<1x3x3x3xi8> loc("transpose")
// CHECK:      npu.host(%[[C]])
// CHECK:      fixed.transpose %{{.*}} {npu.host_reason = "transpose [0, 1, 3, 2] of [1, 3, 3, 3] is neither the NHWC nor the NCHW order of its input", perm = array<i64: 0, 1, 3, 2>} {{.*}} loc("swap_hw")
