// RUN: xnpu-opt %s -p lower-npu-to-isa | filecheck %s

// Emission only reads the annotations: here written by hand, with a tiling of 2 output
// rows (two tiles, the second reading the halo row above it) and SRAM addresses chosen
// freely: two slots for the input and output tiles, which the two tiles take in turn.

builtin.module attributes {npu.target = "xnpu_default", npu.activation_bytes = 160 : i64} {
  isa.constants dense<"0x0101010101010101010101010101010101010000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000401000"> : tensor<68xi8>
  func.func @main(%x: tensor<1x1x4x4xf32> {nn.name = "x"}) -> (tensor<1x2x4x4xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", npu.ddr = 128 : i64, scale = 0.5 : f64} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xi8>
    %w = fixed.constant dense<1> : tensor<2x1x3x3xi8>
    %1 = npu.conv %0, %w {npu.layout = "NHWC", npu.tile = array<i64: 2, 4, 2>, npu.sram = {weights = array<i64: 0>, records = array<i64: 2400>, input = array<i64: 2560, 2816>, output = array<i64: 4096, 4352>}, npu.constants = {weights = 0 : i64, records = 64 : i64}, npu.ddr = 192 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x1x4x4xi8>, tensor<2x1x3x3xi8>) -> tensor<1x2x4x4xi8> loc("conv")
    %2 = npu.relayout %1 "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 4, 4, 2>, npu.sram = {staging = array<i64: 0>}, npu.ddr = 256 : i64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8>
    %3 = fixed.dequantize %2 {scale = 0.5 : f64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xf32>
    func.return %3 : tensor<1x2x4x4xf32>
  }
}

// CHECK:      builtin.module attributes {isa.target = "xnpu_default", isa.activation_bytes = 160 : i64, isa.layers = 2 : i64} {
// CHECK-NEXT:   isa.constants dense<"0x0101{{[0-9A-F]+}}00401000"> : tensor<68xi8>
// CHECK-NEXT:   isa.io {name = "x", direction = "input", dtype = "int8", layout = "NCHW", shape = array<i64: 1, 1, 4, 4>, scale = 5.000000e-01 : f64, zero_point = 0 : i64, ddr_addr = 128 : i64}
// CHECK-NEXT:   isa.io {name = "y", direction = "output", dtype = "int8", layout = "NCHW", shape = array<i64: 1, 2, 4, 4>, scale = 5.000000e-01 : f64, zero_point = 0 : i64, ddr_addr = 256 : i64}
// CHECK-NEXT:   isa.load {layout = OHWI, elem_log2 = 0, sram_addr = 0, ddr_addr = 0, d0 = 2, d1 = 3, d2 = 3, d3 = 1, {{.*}} loc("conv")
// CHECK-NEXT:   isa.load {layout = RAW, elem_log2 = 0, sram_addr = 2400, ddr_addr = 64, d0 = 1, d1 = 4, {{.*}} loc("conv")
// CHECK-NEXT:   isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 2560, ddr_addr = 128, d0 = 3, d1 = 4, d2 = 1, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0} loc("conv")
// CHECK-NEXT:   isa.conv {depthwise = 0, relu = 0, per_channel = 0, bias = 0, in_addr = 2560, weight_addr = 0, bias_addr = 0, rescale_addr = 2400, out_addr = 4096, in_h = 3, in_w = 4, in_c = 1, out_c = 2, kernel_h = 3, kernel_w = 3, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 1, pad_left = 1, pad_bottom = 0, pad_right = 1} loc("conv")
// CHECK-NEXT:   isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 4096, ddr_addr = 192, d0 = 2, d1 = 4, d2 = 2, {{.*}} loc("conv")
// CHECK-NEXT:   isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 2816, ddr_addr = 132, d0 = 3, d1 = 4, d2 = 1, {{.*}} loc("conv")
// CHECK-NEXT:   isa.conv {{{.*}} in_addr = 2816, {{.*}} out_addr = 4352, in_h = 3, in_w = 4, {{.*}} pad_top = 0, pad_left = 1, pad_bottom = 1, pad_right = 1} loc("conv")
// CHECK-NEXT:   isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 4352, ddr_addr = 208, d0 = 2, d1 = 4, d2 = 2, {{.*}} loc("conv")
// CHECK-NEXT:   isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = 192, d0 = 4, d1 = 4, d2 = 2,
// CHECK-NEXT:   isa.store {layout = NCHW, elem_log2 = 0, sram_addr = 0, ddr_addr = 256, d0 = 2, d1 = 4, d2 = 4,
// CHECK-NEXT:   isa.sync {halt = 1, token = 0}
// CHECK-NEXT: }
