// RUN: xnpu-opt %s --split-input-file --target=%S/../../../python/data/xnpu_test_16k.toml -p 'npu-assign-layout,npu-tile,npu-plan-sram,npu-allocate,lower-npu-to-isa' | filecheck %s

// On a 16 KiB SRAM a 64 x 64 map (16 lanes per pixel once padded: 64 KiB) is cut into
// bands of output rows. Each band loads the input rows its outputs read (the halo: one
// extra row on each inner side for a 3x3 kernel), only bands on the map's border carry the
// zero padding, and consecutive bands use the two slots of the input and output buffers
// (double buffering: the DMA fills one while the unit works on the other).

builtin.module {
  func.func @main(%x: tensor<1x1x64x64xf32> {nn.name = "x"}) -> (tensor<1x8x64x64xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x1x64x64xf32> -> tensor<1x1x64x64xi8>
    %1 = fixed.constant dense<1> : tensor<8x1x3x3xi8> loc("conv1")
    %2 = npu.conv %0, %1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x1x64x64xi8>, tensor<8x1x3x3xi8>) -> tensor<1x8x64x64xi8> loc("conv1")
    %3 = npu.conv %2, %1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x8x64x64xi8>, tensor<8x1x3x3xi8>) -> tensor<1x8x64x64xi8> loc("dw")
    %4 = fixed.dequantize %3 {scale = 0.25 : f64} : tensor<1x8x64x64xi8> -> tensor<1x8x64x64xf32>
    func.return %4 : tensor<1x8x64x64xf32>
  }
}

// conv1: bands of 2 output rows, the input read as the host wrote it (one channel: NCHW is NHWC).
// CHECK-LABEL: isa.load {layout = OHWI, {{.*}} loc("conv1")
// CHECK:       isa.load {layout = NHWC, elem_log2 = 0, sram_addr = [[IN0:[0-9]+]], ddr_addr = [[X:[0-9]+]], d0 = 3, d1 = 64, d2 = 1, d3 = 0, ddr_row_stride = 0,
// CHECK-NEXT:  isa.conv {{{.*}} in_addr = [[IN0]], {{.*}} out_addr = [[OUT0:[0-9]+]], in_h = 3, in_w = 64, in_c = 1, out_c = 8, {{.*}} pad_top = 1, pad_left = 1, pad_bottom = 0, pad_right = 1} loc("conv1")
// CHECK-NEXT:  isa.store {layout = NHWC, {{.*}} sram_addr = [[OUT0]], ddr_addr = [[Y:[0-9]+]], d0 = 2, d1 = 64, d2 = 8, d3 = 0, ddr_row_stride = 0,
// CHECK-NEXT:  isa.load {layout = NHWC, {{.*}} sram_addr = [[IN1:[0-9]+]], {{.*}} d0 = 4, d1 = 64, d2 = 1,
// CHECK-NEXT:  isa.conv {{{.*}} in_addr = [[IN1]], {{.*}} out_addr = [[OUT1:[0-9]+]], in_h = 4, in_w = 64, {{.*}} pad_top = 0, pad_left = 1, pad_bottom = 0, pad_right = 1} loc("conv1")
// CHECK-NEXT:  isa.store {layout = NHWC, {{.*}} sram_addr = [[OUT1]], {{.*}} d0 = 2, d1 = 64, d2 = 8,
// CHECK-NEXT:  isa.load {layout = NHWC, {{.*}} sram_addr = [[IN0]], {{.*}} d0 = 4, d1 = 64, d2 = 1,
// CHECK-NEXT:  isa.conv {{{.*}} in_addr = [[IN0]], {{.*}} out_addr = [[OUT0]], {{.*}} loc("conv1")
// CHECK:       isa.conv {{{.*}} in_h = 3, in_w = 64, {{.*}} pad_top = 0, pad_left = 1, pad_bottom = 1, pad_right = 1} loc("conv1")
// CHECK-NEXT:  isa.store {layout = NHWC, {{.*}} d0 = 2, d1 = 64, d2 = 8,
// The depthwise conv (the 8 maps are one chunk) is tiled the same way.
// CHECK-NEXT:  isa.load {layout = DW, {{.*}} d0 = 8, d1 = 3, d2 = 3, {{.*}} loc("dw")
// CHECK:       isa.conv {depthwise = 1, {{.*}} in_c = 8, out_c = 8, {{.*}} pad_top = 1, pad_left = 1, pad_bottom = 0, pad_right = 1} loc("dw")
// CHECK:       isa.conv {depthwise = 1, {{.*}} pad_top = 0, pad_left = 1, pad_bottom = 1, pad_right = 1} loc("dw")
// The output for the host: NHWC -> NCHW one channel plane at a time (the map exceeds SRAM).
// CHECK:       isa.load {layout = NHWC, {{.*}} d1 = 64, d2 = 1, d3 = 0, ddr_row_stride = 512, ddr_pixel_stride = 8,
// CHECK-NEXT:  isa.store {layout = NHWC, {{.*}} d1 = 64, d2 = 1, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0,
// CHECK:       isa.sync {halt = 1, token = 0}

// -----

// A map too wide for one row of output tiles in the 16 KiB: bands of output columns, each
// loading the input columns its windows read (the halo, through the DMA's row stride), the
// zero padding only on the map's left and right edges.

builtin.module {
  func.func @main(%x: tensor<1x1x8x600xf32> {nn.name = "x"}) -> (tensor<1x8x8x600xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x1x8x600xf32> -> tensor<1x1x8x600xi8>
    %1 = fixed.constant dense<1> : tensor<8x1x3x3xi8> loc("conv1")
    %2 = npu.conv %0, %1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x1x8x600xi8>, tensor<8x1x3x3xi8>) -> tensor<1x8x8x600xi8> loc("conv1")
    %3 = fixed.dequantize %2 {scale = 0.25 : f64} : tensor<1x8x8x600xi8> -> tensor<1x8x8x600xf32>
    func.return %3 : tensor<1x8x8x600xf32>
  }
}

// CHECK-LABEL: isa.load {layout = OHWI, {{.*}} loc("conv1")
// CHECK:       isa.load {layout = NHWC, {{.*}} d0 = 8, d1 = 21, d2 = 1, d3 = 0, ddr_row_stride = 600, ddr_pixel_stride = 0,
// CHECK-NEXT:  isa.conv {{{.*}} in_h = 8, in_w = 21, {{.*}} pad_top = 1, pad_left = 1, pad_bottom = 1, pad_right = 0} loc("conv1")
// CHECK-NEXT:  isa.store {layout = NHWC, {{.*}} d0 = 8, d1 = 20, d2 = 8, d3 = 0, ddr_row_stride = 4800, ddr_pixel_stride = 0,
// CHECK-NEXT:  isa.load {layout = NHWC, {{.*}} d0 = 8, d1 = 22, d2 = 1, d3 = 0, ddr_row_stride = 600, ddr_pixel_stride = 0,
// CHECK-NEXT:  isa.conv {{{.*}} in_h = 8, in_w = 22, {{.*}} pad_top = 1, pad_left = 0, pad_bottom = 1, pad_right = 0} loc("conv1")
// CHECK:       isa.conv {{{.*}} in_h = 8, in_w = 21, {{.*}} pad_top = 1, pad_left = 0, pad_bottom = 1, pad_right = 1} loc("conv1")
