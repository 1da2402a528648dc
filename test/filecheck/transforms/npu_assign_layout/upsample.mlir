// RUN: xnpu-opt %s -p npu-assign-layout | filecheck %s

// An edge pad and an interleave move NHWC maps (the DMA steps over whole pixels): the program
// input (row-major NCHW, as the host writes it) is copied to NHWC once for both, their results
// are NHWC, and the output is copied back to NCHW for the host.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%a: tensor<1x2x2x3xf32> {nn.name = "x"}) -> (tensor<1x2x4x6xf32> {nn.name = "y"}) {
    %x = fixed.quantize %a {scale = 0.1 : f64} : tensor<1x2x2x3xf32> -> tensor<1x2x2x3xi8>
    %p = npu.pad "edge" %x {pads = array<i64: 0, 0, 1, 1>} : tensor<1x2x2x3xi8> -> tensor<1x2x3x4xi8> loc("pad")
    %n = npu.interleave %p, %x, %p, %x {factors = array<i64: 2, 2>, offsets = array<i64: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x3x4xi8>, tensor<1x2x2x3xi8>, tensor<1x2x3x4xi8>, tensor<1x2x2x3xi8>) -> tensor<1x2x4x6xi8> loc("interleave")
    %0 = fixed.dequantize %n {scale = 0.1 : f64} : tensor<1x2x4x6xi8> -> tensor<1x2x4x6xf32>
    func.return %0 : tensor<1x2x4x6xf32>
  }
}

// CHECK:      %x = fixed.quantize %a {npu.layout = "NCHW", scale = 1.000000e-01 : f64}
// CHECK-NEXT: %[[R:.*]] = npu.relayout %x "NHWC" {npu.layout = "NHWC"} {{.*}} loc("pad")
// CHECK-NEXT: %p = npu.pad "edge" %[[R]] {npu.layout = "NHWC", pads = array<i64: 0, 0, 1, 1>}
// CHECK-NEXT: %n = npu.interleave %p, %[[R]], %p, %[[R]] {npu.layout = "NHWC", factors = array<i64: 2, 2>, offsets = array<i64: 1, 1, 0, 0, 0, 0, 0, 0>}
// CHECK-NEXT: %[[O:.*]] = npu.relayout %n "NCHW" {npu.layout = "NCHW"}
// CHECK-NEXT: fixed.dequantize %[[O]]
