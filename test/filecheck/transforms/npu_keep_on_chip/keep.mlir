// RUN: xnpu-opt %s --split-input-file -p npu-keep-on-chip | filecheck %s

// A chain of three convs whose results are read by units (and by relayouts, which STORE a
// map from where it is): each stays in SRAM at the lowest address free while it is alive, and
// no STORE or LOAD moves it between the layers.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x8x8xf32> {nn.name = "x"}) -> (tensor<1x4x8x8xf32> {nn.name = "b"}, tensor<1x4x8x8xf32> {nn.name = "c"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.5 : f64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xi8>
    %w1 = fixed.constant dense<1> : tensor<4x2x3x3xi8>
    %a = npu.conv %0, %w1 {npu.layout = "NHWC", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x2x8x8xi8>, tensor<4x2x3x3xi8>) -> tensor<1x4x8x8xi8> loc("a")
    %w2 = fixed.constant dense<1> : tensor<4x4x3x3xi8>
    %b = npu.conv %a, %w2 {npu.layout = "NHWC", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x4x8x8xi8>, tensor<4x4x3x3xi8>) -> tensor<1x4x8x8xi8> loc("b")
    %c = npu.conv %b, %w2 {npu.layout = "NHWC", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x4x8x8xi8>, tensor<4x4x3x3xi8>) -> tensor<1x4x8x8xi8> loc("c")
    %rb = npu.relayout %b "NCHW" {npu.layout = "NCHW"} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xi8>
    %rc = npu.relayout %c "NCHW" {npu.layout = "NCHW"} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xi8>
    %db = fixed.dequantize %rb {scale = 0.5 : f64} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xf32>
    %dc = fixed.dequantize %rc {scale = 0.5 : f64} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xf32>
    func.return %db, %dc : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
  }
}

// %a: 8 x 8 pixels of 16 padded lanes, 1 KiB at 0, alive from its conv to the next one; %b
// is written while %a is read: the next free 16-byte boundary, 1024; %c reuses %a's bytes,
// dead since %b's conv.
// CHECK:      %a = npu.conv %0, %w1 {npu.layout = "NHWC", npu.on_chip, npu.sram_home = 0 : i64, strides
// CHECK:      %b = npu.conv %a, %w2 {npu.layout = "NHWC", npu.on_chip, npu.sram_home = 1024 : i64, strides
// CHECK:      %c = npu.conv %b, %w2 {npu.layout = "NHWC", npu.on_chip, npu.sram_home = 0 : i64, strides

// -----

// A result that a host segment reads stays on chip for its other reader and is spilled to
// DDR for the host (npu.spill).

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x8x8xf32> {nn.name = "x"}) -> (tensor<1x4x8x8xf32> {nn.name = "c"}, tensor<1x4x8x8xf32> {nn.name = "h"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.5 : f64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xi8>
    %w1 = fixed.constant dense<1> : tensor<4x2x3x3xi8>
    %a = npu.conv %0, %w1 {npu.layout = "NHWC", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x2x8x8xi8>, tensor<4x2x3x3xi8>) -> tensor<1x4x8x8xi8> loc("a")
    %h = npu.host(%a) : (tensor<1x4x8x8xi8>) -> (tensor<1x4x8x8xf32>) {
    ^bb0(%in: tensor<1x4x8x8xi8>):
      %f = fixed.dequantize %in {scale = 0.5 : f64} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xf32>
      npu.host_yield %f : tensor<1x4x8x8xf32>
    }
    %w2 = fixed.constant dense<1> : tensor<4x4x3x3xi8>
    %c = npu.conv %a, %w2 {npu.layout = "NHWC", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x4x8x8xi8>, tensor<4x4x3x3xi8>) -> tensor<1x4x8x8xi8> loc("c")
    %rc = npu.relayout %c "NCHW" {npu.layout = "NCHW"} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xi8>
    %dc = fixed.dequantize %rc {scale = 0.5 : f64} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xf32>
    func.return %dc, %h : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
  }
}

// CHECK:      %a = npu.conv %0, %w1 {npu.layout = "NHWC", npu.on_chip, npu.sram_home = 0 : i64, npu.spill, strides
