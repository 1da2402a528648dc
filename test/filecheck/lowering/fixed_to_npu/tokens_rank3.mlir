// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// A row-major tensor of rank 3 ([1, L, C] tokens, a 1-D convolution's [1, C, L]) is the
// matrix of its last axis (L x 1 x C): the reshape to it is a DMA view, its relu a CLAMP, its
// per-channel bias an ELTWISE add broadcast along the channels; nothing goes to the host.

builtin.module {
  func.func @main(%a: tensor<1x2x1x4xf32>) -> tensor<1x2x4xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x1x4xf32> -> tensor<1x2x1x4xi8>
    %0 = fixed.reshape %x : tensor<1x2x1x4xi8> -> tensor<1x2x4xi8> loc("squeeze")
    %b = fixed.constant dense<[1, 2, 3, 4]> : tensor<4xi8>
    %1 = fixed.add %0, %b {lhs_multiplier = 16384 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 0 : i64} : (tensor<1x2x4xi8>, tensor<4xi8>) -> tensor<1x2x4xi24> loc("bias")
    %2 = fixed.rescale %1 {multiplier = array<i64: 16384>, shift = array<i64: 15>} : tensor<1x2x4xi24> -> tensor<1x2x4xi8> loc("bias")
    %3 = fixed.clamp %2 {min = 0 : i64, max = 127 : i64} : tensor<1x2x4xi8> -> tensor<1x2x4xi8> loc("relu")
    %4 = fixed.dequantize %3 {scale = 0.0078125 : f64} : tensor<1x2x4xi8> -> tensor<1x2x4xf32> loc("relu")
    func.return %4 : tensor<1x2x4xf32>
  }
}
// CHECK-NOT:  npu.host
// CHECK:      %[[R:.*]] = npu.reshape %{{.*}} : tensor<1x2x1x4xi8> -> tensor<1x2x4xi8> loc("squeeze")
// CHECK:      %[[E:.*]] = npu.eltwise "add" %[[R]], %{{.*}} {{.*}}relu{{.*}} : (tensor<1x2x4xi8>, tensor<4xi8>) -> tensor<1x2x4xi8>
// CHECK-NEXT: fixed.dequantize %[[E]]
