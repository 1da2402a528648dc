// RUN: xnpu-opt %s --target=%S/../../../python/data/xnpu_test_16k.toml -p npu-keep-on-chip | filecheck %s

// On a 16 KiB SRAM the 64 x 64 map of 8 channels (16 padded lanes: 64 KiB) cannot stay on
// chip: it goes through DDR, band by band. The 16 x 16 map after the pool (4 KiB) fits beside
// the next conv's smallest working set and stays.

builtin.module {
  func.func @main(%x: tensor<1x1x64x64xf32> {nn.name = "x"}) -> (tensor<1x8x16x16xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.5 : f64} : tensor<1x1x64x64xf32> -> tensor<1x1x64x64xi8>
    %w = fixed.constant dense<1> : tensor<8x1x3x3xi8>
    %big = npu.conv %0, %w {npu.layout = "NHWC", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x1x64x64xi8>, tensor<8x1x3x3xi8>) -> tensor<1x8x64x64xi8> loc("big")
    %small = npu.pool "max" %big {npu.layout = "NHWC", kernel_shape = array<i64: 4, 4>, strides = array<i64: 4, 4>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x8x64x64xi8> -> tensor<1x8x16x16xi8> loc("pool")
    %w2 = fixed.constant dense<1> : tensor<8x8x1x1xi8>
    %y = npu.conv %small, %w2 {npu.layout = "NHWC", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x8x16x16xi8>, tensor<8x8x1x1xi8>) -> tensor<1x8x16x16xi8> loc("y")
    %r = npu.relayout %y "NCHW" {npu.layout = "NCHW"} : tensor<1x8x16x16xi8> -> tensor<1x8x16x16xi8>
    %d = fixed.dequantize %r {scale = 0.5 : f64} : tensor<1x8x16x16xi8> -> tensor<1x8x16x16xf32>
    func.return %d : tensor<1x8x16x16xf32>
  }
}

// CHECK:      %big = npu.conv %0, %w {npu.layout = "NHWC", strides
// CHECK:      %small = npu.pool "max" %big {npu.layout = "NHWC", npu.on_chip, npu.sram_home = 0 : i64, kernel_shape
