// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// A tensor the accelerator cannot hold (rank 3: an H x W x C view has rank 1, 2 or 4) is
// decided at unit selection: every op that reads or writes it is placed on the host with that
// reason, instead of failing in a later pass. The clip of the rank-4 map stays on the CLAMP
// unit; the reshape to rank 3, the relu of the rank-3 tensor and the program output's
// dequantize go to the host, in one segment.

builtin.module {
  func.func @main(%a: tensor<1x2x1x4xf32>) -> tensor<1x2x4xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x1x4xf32> -> tensor<1x2x1x4xi8>
    %0 = fixed.clamp %x {min = -3 : i64, max = 100 : i64} : tensor<1x2x1x4xi8> -> tensor<1x2x1x4xi8> loc("clip")
    %1 = fixed.reshape %0 : tensor<1x2x1x4xi8> -> tensor<1x2x4xi8> loc("squeeze")
    %2 = fixed.clamp %1 {min = 0 : i64, max = 127 : i64} : tensor<1x2x4xi8> -> tensor<1x2x4xi8> loc("relu")
    %3 = fixed.dequantize %2 {scale = 0.0078125 : f64} : tensor<1x2x4xi8> -> tensor<1x2x4xf32> loc("relu")
    func.return %3 : tensor<1x2x4xf32>
  }
}
// CHECK:      %[[X:.*]] = fixed.quantize %a
// CHECK-NEXT: %[[C:.*]] = npu.clamp %[[X]] {{.*}} loc("clip")
// CHECK-NEXT: %[[H:.*]] = npu.host(%[[C]]) : (tensor<1x2x1x4xi8>) -> tensor<1x2x4xf32> {
// CHECK-NEXT: ^{{.*}}(%[[IN:.*]]: tensor<1x2x1x4xi8>):
// CHECK-NEXT:   %[[R:.*]] = fixed.reshape %[[IN]] {npu.host_reason = "rank-3 tensors are not supported (rank 1, 2 or 4 only)"} {{.*}} loc("squeeze")
// CHECK-NEXT:   %[[L:.*]] = fixed.clamp %[[R]] {{.*}}npu.host_reason = "rank-3 tensors are not supported (rank 1, 2 or 4 only)"{{.*}} loc("relu")
// CHECK-NEXT:   %[[Y:.*]] = fixed.dequantize %[[L]] {{.*}}npu.host_reason = "rank-3 tensors are not supported (rank 1, 2 or 4 only)"{{.*}} loc("relu")
// CHECK-NEXT:   npu.host_yield %[[Y]] : tensor<1x2x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[H]] : tensor<1x2x4xf32>
