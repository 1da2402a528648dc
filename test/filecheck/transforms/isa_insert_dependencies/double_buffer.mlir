// RUN: xnpu-opt %s -p isa-insert-dependencies | filecheck %s

// Two tiles through two input buffers (0 and 512) and one output buffer (4096). The DMA queue
// (LOAD, STORE) and the EXEC queue (CLAMP) run concurrently: a token orders each instruction
// after the last instruction of the other queue it conflicts with, and nothing else.

builtin.module attributes {isa.target = "xnpu_default"} {
  isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = 65536, d0 = 4, d1 = 8, d2 = 16, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0}
  isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 512, ddr_addr = 66048, d0 = 4, d1 = 8, d2 = 16, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0}
  isa.clamp {in_addr = 0, out_addr = 4096, h = 4, w = 8, c = 16, min = -5, max = 5}
  isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 4096, ddr_addr = 131072, d0 = 4, d1 = 8, d2 = 16, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0}
  isa.clamp {in_addr = 512, out_addr = 4096, h = 4, w = 8, c = 16, min = -5, max = 5}
  isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 4096, ddr_addr = 131584, d0 = 4, d1 = 8, d2 = 16, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0}
  isa.sync {halt = 1, token = 0}
}

// The first LOAD gives the first CLAMP its token; the second LOAD needs no token: the first
// CLAMP reads another buffer. The STORE waits for the CLAMP that wrote what it stores; the
// second CLAMP, overwriting the stored bytes, waits for that STORE (the second LOAD it also
// reads was done before it, in the DMA queue's order). The last STORE waits for the last CLAMP.
// CHECK:      isa.load {{{.*}}sram_addr = 0, {{.*}}, signal = 1}
// CHECK-NEXT: isa.load {{{.*}}sram_addr = 512, {{.*}}sram_row_stride = 0}
// CHECK-NEXT: isa.clamp {in_addr = 0, {{.*}}, wait = 1, signal = 1}
// CHECK-NEXT: isa.store {{{.*}}ddr_addr = 131072, {{.*}}, wait = 1, signal = 1}
// CHECK-NEXT: isa.clamp {in_addr = 512, {{.*}}, wait = 1, signal = 1}
// CHECK-NEXT: isa.store {{{.*}}ddr_addr = 131584, {{.*}}, wait = 1}
// CHECK-NEXT: isa.sync {halt = 1, token = 0}
