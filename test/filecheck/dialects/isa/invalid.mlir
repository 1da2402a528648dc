// RUN: xnpu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The isa verifiers reject a field outside its width or enumeration, and, when the module
// names a target, what that target cannot run or hold.

builtin.module {
  isa.conv {depthwise = 0, relu = 0, per_channel = 0, bias = 0, in_addr = 0, weight_addr = 0, bias_addr = 0, rescale_addr = 0, out_addr = 0, in_h = 1, in_w = 1, in_c = 1, out_c = 1, kernel_h = 16, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0}
}
// CHECK: isa.conv: CONV.kernel_h = 16 does not fit its 4-bit unsigned field [0, 15]

// -----

builtin.module {
  isa.load {layout = 7, elem_log2 = 0, sram_addr = 0, ddr_addr = 0, d0 = 1, d1 = 1, d2 = 0, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0}
}
// CHECK: isa.load: LOAD.layout = 7 is not one of 0=RAW, 1=NHWC, 2=NCHW, 3=OHWI, 4=DW

// -----

builtin.module attributes {isa.target = "xnpu_default"} {
  isa.load {layout = RAW, elem_log2 = 0, sram_addr = 1048570, ddr_addr = 0, d0 = 1, d1 = 16, d2 = 0, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0}
}
// CHECK: isa.load: LOAD.sram_addr: bytes [1048570, 1048586) leave the 1048576-byte SRAM of xnpu_default

// -----

builtin.module attributes {isa.target = "xnpu_lite"} {
  isa.clamp {in_addr = 0, out_addr = 0, h = 1, w = 1, c = 1, min = 0, max = 6}
}
// CHECK: isa.clamp: CLAMP is not valid on target xnpu_lite: the target has no clamp unit

// -----

builtin.module attributes {isa.target = "xnpu_lite"} {
  isa.eltwise {op = mul, b_broadcast = none, relu = 0, stage16 = 0, a_addr = 0, b_addr = 16, out_addr = 0, h = 1, w = 1, c = 1, a_multiplier = 0, a_shift = 0, b_multiplier = 0, b_shift = 0, out_multiplier = 16384, out_shift = 15, pre_shift = 0}
}
// CHECK: isa.eltwise: ELTWISE is not valid on target xnpu_lite: element-wise mul is not supported (supported: add, sub)

// -----

builtin.module attributes {isa.target = "no_such_target"} {
  isa.sync {halt = 1, token = 0}
}
// CHECK: unknown target 'no_such_target' (known: xnpu_default, xnpu_lite)

// -----

builtin.module attributes {isa.target = "xnpu_default"} {
  isa.conv {depthwise = 0, relu = 0, per_channel = 0, bias = 0, in_addr = 0, weight_addr = 4096, bias_addr = 0, rescale_addr = 8192, out_addr = 100, in_h = 4, in_w = 4, in_c = 16, out_c = 16, kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0}
}
// CHECK: isa.conv: CONV: output [100, 356) overlaps in_addr [0, 256)

// -----

builtin.module attributes {isa.target = "xnpu_default"} {
  isa.table {in_addr = 0, out_addr = 0, table_addr = 8, h = 1, w = 1, c = 16}
}
// CHECK: isa.table: TABLE: output [0, 16) overlaps table_addr [8, 264)
