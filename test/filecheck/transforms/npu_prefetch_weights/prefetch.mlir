// RUN: xnpu-opt %s -p npu-prefetch-weights | filecheck %s

// Three convs on small maps: every conv after the first gets its constants loaded while the
// layers before it run, as many layers early as SRAM has room beside those layers' blocks
// (at most 4): the second conv's one layer early, the third's two.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x8x8xf32> {nn.name = "x"}) -> (tensor<1x4x8x8xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.5 : f64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xi8>
    %w1 = fixed.constant dense<1> : tensor<4x2x3x3xi8>
    %a = npu.conv %0, %w1 {npu.layout = "NHWC", npu.tile = array<i64: 8, 8, 4>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x2x8x8xi8>, tensor<4x2x3x3xi8>) -> tensor<1x4x8x8xi8> loc("conv1")
    %w2 = fixed.constant dense<1> : tensor<4x4x3x3xi8>
    %b = npu.conv %a, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 8, 8, 4>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x4x8x8xi8>, tensor<4x4x3x3xi8>) -> tensor<1x4x8x8xi8> loc("conv2")
    %c = npu.conv %b, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 8, 8, 4>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x4x8x8xi8>, tensor<4x4x3x3xi8>) -> tensor<1x4x8x8xi8> loc("conv3")
    %r = npu.relayout %c "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 8, 8, 4>} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xi8>
    %y = fixed.dequantize %r {scale = 0.5 : f64} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xf32>
    func.return %y : tensor<1x4x8x8xf32>
  }
}

// CHECK:      %a = npu.conv %0, %w1 {npu.layout = "NHWC", npu.tile = array<i64: 8, 8, 4>, strides
// CHECK:      %b = npu.conv %a, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 8, 8, 4>, npu.prefetch = 1 : i64, strides
// CHECK:      %c = npu.conv %b, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 8, 8, 4>, npu.prefetch = 2 : i64, strides
