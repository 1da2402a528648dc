// RUN: xnpu-opt %s --target=%S/../../../python/data/xnpu_test_16k.toml -p npu-prefetch-weights | filecheck %s

// On a 16 KiB SRAM the first conv's working set leaves no room for the second's 9 KiB of
// weights (64 x 3 x 3 x 16): they are loaded when the second conv starts.

builtin.module {
  func.func @main(%x: tensor<1x8x16x16xf32> {nn.name = "x"}) -> (tensor<1x64x16x16xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.5 : f64} : tensor<1x8x16x16xf32> -> tensor<1x8x16x16xi8>
    %w1 = fixed.constant dense<1> : tensor<8x8x3x3xi8>
    %a = npu.conv %0, %w1 {npu.layout = "NHWC", npu.tile = array<i64: 4, 16, 8>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x8x16x16xi8>, tensor<8x8x3x3xi8>) -> tensor<1x8x16x16xi8> loc("conv1")
    %w2 = fixed.constant dense<1> : tensor<64x8x3x3xi8>
    %b = npu.conv %a, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 2, 16, 64>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x8x16x16xi8>, tensor<64x8x3x3xi8>) -> tensor<1x64x16x16xi8> loc("conv2")
    %r = npu.relayout %b "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 16, 16, 1>} : tensor<1x64x16x16xi8> -> tensor<1x64x16x16xi8>
    %y = fixed.dequantize %r {scale = 0.5 : f64} : tensor<1x64x16x16xi8> -> tensor<1x64x16x16xf32>
    func.return %y : tensor<1x64x16x16xf32>
  }
}

// CHECK:      %b = npu.conv %a, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 2, 16, 64>, strides
