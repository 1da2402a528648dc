// RUN: xnpu-opt %s -p 'npu-assign-layout,npu-tile,npu-plan-sram,npu-allocate,lower-npu-to-isa' | filecheck %s

// npu.interleave and npu.pad are DMA copies through one staging buffer. The nearest x2 of a
// 2 x 3 x 2 map is one LOAD and four STOREs, each every second row (row stride 2 * 6 * 2 =
// 24 bytes) and every second pixel (pixel stride 2 * 2 = 4) of the 4 x 6 result, from rows
// and columns (a, b) = (0, 0), (0, 1), (1, 0), (1, 1): DDR 256 + 0, 2, 12, 14. The edge pad
// by one pixel (4 x 5 result, rows 10 bytes apart) stores the band inside it, then its first
// and last columns (one pixel wide, read with the staged row pitch 3 * 16 = 48), then the
// first and last rows of the map above and below it, each with its corner pixels (the result
// at 320: pixel (row, column) at 320 + (row * 5 + column) * 2).

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%a: tensor<1x2x2x3xf32> {nn.name = "x"}) -> (tensor<1x2x4x6xf32> {nn.name = "up"}, tensor<1x2x4x5xf32> {nn.name = "pad"}) {
    %x = fixed.quantize %a {scale = 0.1 : f64} : tensor<1x2x2x3xf32> -> tensor<1x2x2x3xi8>
    %w = fixed.constant dense<1> : tensor<2x1x1x1xi8>
    %c = npu.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64, multiplier = array<i64: 16384>, shift = array<i64: 14>} : (tensor<1x2x2x3xi8>, tensor<2x1x1x1xi8>) -> tensor<1x2x2x3xi8> loc("conv")
    %n = npu.interleave %c, %c, %c, %c {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x2x3xi8>, tensor<1x2x2x3xi8>, tensor<1x2x2x3xi8>, tensor<1x2x2x3xi8>) -> tensor<1x2x4x6xi8> loc("nearest")
    %p = npu.pad "edge" %c {pads = array<i64: 1, 1, 1, 1>} : tensor<1x2x2x3xi8> -> tensor<1x2x4x5xi8> loc("pad")
    %0 = fixed.dequantize %n {scale = 0.1 : f64} : tensor<1x2x4x6xi8> -> tensor<1x2x4x6xf32>
    %1 = fixed.dequantize %p {scale = 0.1 : f64} : tensor<1x2x4x5xi8> -> tensor<1x2x4x5xf32>
    func.return %0, %1 : tensor<1x2x4x6xf32>, tensor<1x2x4x5xf32>
  }
}

// CHECK:      isa.conv {{.*}} loc("conv")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = {{[0-9]+}}, ddr_addr = [[C:[0-9]+]], d0 = 2, d1 = 3, d2 = 2, {{.*}} loc("conv")
// CHECK-NEXT: isa.load {layout = NHWC, elem_log2 = 0, sram_addr = [[S:[0-9]+]], ddr_addr = [[C]], d0 = 2, d1 = 3, d2 = 2, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0} loc("nearest")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = [[S]], ddr_addr = 256, d0 = 2, d1 = 3, d2 = 2, d3 = 0, ddr_row_stride = 24, ddr_pixel_stride = 4, sram_row_stride = 0} loc("nearest")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = [[S]], ddr_addr = 258, d0 = 2, d1 = 3, d2 = 2, d3 = 0, ddr_row_stride = 24, ddr_pixel_stride = 4, sram_row_stride = 0} loc("nearest")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = [[S]], ddr_addr = 268, d0 = 2, d1 = 3, d2 = 2, d3 = 0, ddr_row_stride = 24, ddr_pixel_stride = 4, sram_row_stride = 0} loc("nearest")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = [[S]], ddr_addr = 270, d0 = 2, d1 = 3, d2 = 2, d3 = 0, ddr_row_stride = 24, ddr_pixel_stride = 4, sram_row_stride = 0} loc("nearest")
// CHECK-NEXT: isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = [[C]], d0 = 2, d1 = 3, d2 = 2, {{.*}} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = 332, d0 = 2, d1 = 3, d2 = 2, d3 = 0, ddr_row_stride = 10, ddr_pixel_stride = 0, sram_row_stride = 48} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = 330, d0 = 2, d1 = 1, d2 = 2, d3 = 0, ddr_row_stride = 10, ddr_pixel_stride = 0, sram_row_stride = 48} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 32, ddr_addr = 338, d0 = 2, d1 = 1, d2 = 2, d3 = 0, ddr_row_stride = 10, ddr_pixel_stride = 0, sram_row_stride = 48} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = 322, d0 = 1, d1 = 3, {{.*}} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = 320, d0 = 1, d1 = 1, {{.*}} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 32, ddr_addr = 328, d0 = 1, d1 = 1, {{.*}} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 48, ddr_addr = 352, d0 = 1, d1 = 3, {{.*}} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 48, ddr_addr = 350, d0 = 1, d1 = 1, {{.*}} loc("pad")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 80, ddr_addr = 358, d0 = 1, d1 = 1, {{.*}} loc("pad")
// CHECK-NEXT: isa.load {layout = NHWC, {{.*}} ddr_addr = 256, d0 = 4, d1 = 6, d2 = 2,
// CHECK-NEXT: isa.store {layout = NCHW,
