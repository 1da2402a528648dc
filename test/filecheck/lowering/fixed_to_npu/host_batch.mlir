// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// A tensor the accelerator cannot hold (an NCHW map of batch 2: the accelerator runs batch 1)
// is decided at unit selection: every op that reads or writes it is placed on the host with
// that reason, instead of failing in a later pass. The clip of the batch-1 map stays on the
// CLAMP unit; the reshape to batch 2, the relu of the batch-2 map and the program output's
// dequantize go to the host, in one segment.

builtin.module {
  func.func @main(%a: tensor<1x2x1x4xf32>) -> tensor<2x1x1x4xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x1x4xf32> -> tensor<1x2x1x4xi8>
    %0 = fixed.clamp %x {min = -3 : i64, max = 100 : i64} : tensor<1x2x1x4xi8> -> tensor<1x2x1x4xi8> loc("clip")
    %1 = fixed.reshape %0 : tensor<1x2x1x4xi8> -> tensor<2x1x1x4xi8> loc("split_batch")
    %2 = fixed.clamp %1 {min = 0 : i64, max = 127 : i64} : tensor<2x1x1x4xi8> -> tensor<2x1x1x4xi8> loc("relu")
    %3 = fixed.dequantize %2 {scale = 0.0078125 : f64} : tensor<2x1x1x4xi8> -> tensor<2x1x1x4xf32> loc("relu")
    func.return %3 : tensor<2x1x1x4xf32>
  }
}
// CHECK:      %[[X:.*]] = fixed.quantize %a
// CHECK-NEXT: %[[C:.*]] = npu.clamp %[[X]] {{.*}} loc("clip")
// CHECK-NEXT: %[[H:.*]] = npu.host(%[[C]]) : (tensor<1x2x1x4xi8>) -> tensor<2x1x1x4xf32> {
// CHECK-NEXT: ^{{.*}}(%[[IN:.*]]: tensor<1x2x1x4xi8>):
// CHECK-NEXT:   %[[R:.*]] = fixed.reshape %[[IN]] {npu.host_reason = "batch 2 is not supported (the accelerator runs batch 1)"} {{.*}} loc("split_batch")
// CHECK-NEXT:   %[[L:.*]] = fixed.clamp %[[R]] {{.*}}npu.host_reason = "batch 2 is not supported (the accelerator runs batch 1)"{{.*}} loc("relu")
// CHECK-NEXT:   %[[Y:.*]] = fixed.dequantize %[[L]] {{.*}}npu.host_reason = "batch 2 is not supported (the accelerator runs batch 1)"{{.*}} loc("relu")
// CHECK-NEXT:   npu.host_yield %[[Y]] : tensor<2x1x1x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[H]] : tensor<2x1x1x4xf32>
