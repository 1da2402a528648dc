// RUN: xnpu-opt %s -p isa-schedule | filecheck %s

// Two tiles written tile by tile (LOAD, CLAMP, STORE) through two input and two output
// buffers. In this order the DMA queue would run STORE 0 before LOAD 1, and STORE 0 waits
// for CLAMP 0: the second LOAD could not overlap the first CLAMP. isa-schedule moves LOAD 1
// (independent of CLAMP 0 and STORE 0: other bytes) ahead of STORE 0; the CLAMPs keep their
// order, and so does every pair that touches the same bytes.

builtin.module attributes {isa.target = "xnpu_default"} {
  isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = 65536, d0 = 16, d1 = 8, d2 = 16, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0} loc("tile0")
  isa.clamp {in_addr = 0, out_addr = 8192, h = 16, w = 8, c = 16, min = -5, max = 5} loc("tile0")
  isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 8192, ddr_addr = 131072, d0 = 16, d1 = 8, d2 = 16, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0} loc("tile0")
  isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 4096, ddr_addr = 67584, d0 = 16, d1 = 8, d2 = 16, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0} loc("tile1")
  isa.clamp {in_addr = 4096, out_addr = 12288, h = 16, w = 8, c = 16, min = -5, max = 5} loc("tile1")
  isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 12288, ddr_addr = 133120, d0 = 16, d1 = 8, d2 = 16, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0} loc("tile1")
  isa.sync {halt = 1, token = 0}
}

// CHECK:      isa.load {{.*}} loc("tile0")
// CHECK-NEXT: isa.clamp {{.*}} loc("tile0")
// CHECK-NEXT: isa.load {{.*}} loc("tile1")
// CHECK-NEXT: isa.store {{.*}} loc("tile0")
// CHECK-NEXT: isa.clamp {{.*}} loc("tile1")
// CHECK-NEXT: isa.store {{.*}} loc("tile1")
// CHECK-NEXT: isa.sync {halt = 1, token = 0}
