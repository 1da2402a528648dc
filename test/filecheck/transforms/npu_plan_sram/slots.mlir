// RUN: xnpu-opt %s -p npu-plan-sram | filecheck %s

// conv1 is cut into two bands of 4 output rows (npu.tile): its input and output tiles get two
// slots each, which the bands take in turn (the DMA fills one while the CONV works on the
// other); its weights, biases and records are one chunk: one slot. conv2's constants are
// loaded one layer early (npu.prefetch = 1): their slot is placed over both layers' time, so
// it lies beside conv1's whole block. A layer's block goes where the layer before it did not
// touch, where there is room: nothing then makes its first LOAD wait for that layer.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x8x8xf32> {nn.name = "x"}) -> (tensor<1x4x8x8xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.5 : f64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xi8>
    %w1 = fixed.constant dense<1> : tensor<4x2x3x3xi8>
    %a = npu.conv %0, %w1 {npu.layout = "NHWC", npu.tile = array<i64: 4, 8, 4>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x2x8x8xi8>, tensor<4x2x3x3xi8>) -> tensor<1x4x8x8xi8> loc("conv1")
    %w2 = fixed.constant dense<1> : tensor<4x4x3x3xi8>
    %b = npu.conv %a, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 8, 8, 4>, npu.prefetch = 1 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x4x8x8xi8>, tensor<4x4x3x3xi8>) -> tensor<1x4x8x8xi8> loc("conv2")
    %r = npu.relayout %b "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 8, 8, 4>} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xi8>
    %y = fixed.dequantize %r {scale = 0.5 : f64} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xf32>
    func.return %y : tensor<1x4x8x8xf32>
  }
}

// conv1: constants at 0 (weights 16 x 3 x 3 x 16 = 2304 bytes, one record at 2304), then
// its block: two input slots of 6 rows x 8 pixels x 16 lanes (768 bytes) from 2320, two
// output slots of 4 x 8 x 16 (512 bytes). conv2's constants follow conv1's block (4880),
// its block follows them (7200).
// CHECK:      %a = npu.conv %0, %w1 {npu.layout = "NHWC", npu.tile = array<i64: 4, 8, 4>, npu.sram = {input = array<i64: 2320, 3088>, output = array<i64: 3856, 4368>, weights = array<i64: 0>, records = array<i64: 2304>}
// CHECK:      %b = npu.conv %a, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 8, 8, 4>, npu.prefetch = 1 : i64, npu.sram = {input = array<i64: 7200>, output = array<i64: 8224>, weights = array<i64: 4880>, records = array<i64: 7184>}
// CHECK:      npu.relayout %b "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 8, 8, 4>, npu.sram = {staging = array<i64: {{[0-9]+}}>}}
