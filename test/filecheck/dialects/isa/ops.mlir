// RUN: xnpu-opt %s | filecheck %s
// RUN: xnpu-translate --emit-binary %s -o %t.xnb && xnpu-translate --disassemble %t.xnb | filecheck %s --check-prefix=DIS

// Every instruction op prints its fields by name (enumerations by meaning) and parses back;
// the program assembles to a binary and disassembles with an index/provenance comment.

builtin.module attributes {isa.target = "xnpu_default"} {
  isa.constants dense<"0x0102030405060708"> : tensor<8xi8>
  isa.io {name = "x", direction = "input", dtype = "int8", layout = "NCHW", shape = array<i64: 1, 1, 2, 2>, scale = 5.000000e-01 : f64, zero_point = 0 : i64, ddr_addr = 64 : i64}
  isa.io {name = "y", direction = "output", dtype = "int8", layout = "NCHW", shape = array<i64: 1, 1, 2, 2>, scale = 5.000000e-01 : f64, zero_point = 0 : i64, ddr_addr = 128 : i64}
  isa.load {layout = NCHW, elem_log2 = 0, sram_addr = 0, ddr_addr = 64, d0 = 1, d1 = 2, d2 = 2, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0} loc("in")
  isa.conv {depthwise = 1, relu = 1, per_channel = 0, bias = 0, in_addr = 0, weight_addr = 64, bias_addr = 0, rescale_addr = 96, out_addr = 128, in_h = 2, in_w = 2, in_c = 1, out_c = 1, kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0} loc(fused["conv", "relu"])
  isa.eltwise {op = sub, b_broadcast = scalar, relu = 0, stage16 = 0, a_addr = 128, b_addr = 0, out_addr = 128, h = 2, w = 2, c = 1, a_multiplier = 16384, a_shift = -1, b_multiplier = 16384, b_shift = -1, out_multiplier = 16384, out_shift = 16, pre_shift = 0}
  isa.pool {kind = avg, per_position = 0, in_addr = 128, out_addr = 256, rescale_addr = 0, in_h = 2, in_w = 2, c = 1, out_h = 1, out_w = 1, kernel_h = 2, kernel_w = 2, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0, out_multiplier = 16384, out_shift = 17}
  isa.table {in_addr = 256, out_addr = 256, table_addr = 512, h = 1, w = 1, c = 1}
  isa.clamp {in_addr = 256, out_addr = 256, h = 1, w = 1, c = 1, min = -5, max = 100}
  isa.store {layout = NHWC, elem_log2 = 0, sram_addr = 256, ddr_addr = 128, d0 = 1, d1 = 1, d2 = 1, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0}
  isa.sync {halt = 1, token = 7}
}

// CHECK:      isa.load {layout = NCHW, elem_log2 = 0, sram_addr = 0, ddr_addr = 64, d0 = 1, d1 = 2, d2 = 2, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0} loc("in")
// CHECK-NEXT: isa.conv {depthwise = 1, relu = 1, {{.*}} loc(fused["conv", "relu"])
// CHECK-NEXT: isa.eltwise {op = sub, b_broadcast = scalar, {{.*}} a_shift = -1,
// CHECK-NEXT: isa.pool {kind = avg,
// CHECK-NEXT: isa.table {in_addr = 256, out_addr = 256, table_addr = 512, h = 1, w = 1, c = 1}
// CHECK-NEXT: isa.clamp {in_addr = 256, out_addr = 256, h = 1, w = 1, c = 1, min = -5, max = 100}
// CHECK-NEXT: isa.store {layout = NHWC,
// CHECK-NEXT: isa.sync {halt = 1, token = 7}

// DIS:      isa.constants dense<"0x0102030405060708"> : tensor<8xi8>
// DIS:      // [0] in
// DIS-NEXT: isa.load {layout = NCHW, {{.*}} loc("in")
// DIS-NEXT: // [1] conv, relu
// DIS-NEXT: isa.conv {depthwise = 1, {{.*}} loc(fused["conv", "relu"])
// DIS-NEXT: // [2] -
// DIS-NEXT: isa.eltwise {op = sub,
// DIS:      // [7] -
// DIS-NEXT: isa.sync {halt = 1, token = 7}
