// RUN: xnpu-opt %s --split-input-file -p 'npu-assign-layout,npu-tile,npu-plan-sram,npu-allocate,lower-npu-to-isa' | filecheck %s

// Seed 000's two-stage add (R11: add -> shift -> rescale) with the relu after it, one
// npu.eltwise, is ONE ELTWISE: the input multipliers, the int16 pre-shift (stage16) and the
// output rescale are fields of the instruction, and the result overwrites input a in SRAM
// (in place). A mul by a per-channel (1 x C x 1 x 1) operand is an ELTWISE with
// b_broadcast = channel.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%a: tensor<1x1x2x3xf32> {nn.name = "a"}, %b: tensor<1x1x2x3xf32> {nn.name = "b"}) -> (tensor<1x1x2x3xf32> {nn.name = "sum"}) {
    %0 = fixed.quantize %a {scale = 0.004211023622047245 : f64} : tensor<1x1x2x3xf32> -> tensor<1x1x2x3xi8>
    %1 = fixed.quantize %b {scale = 0.00608740157480315 : f64} : tensor<1x1x2x3xf32> -> tensor<1x1x2x3xi8>
    %2 = npu.eltwise "add" %0, %1 {multiplier = 26274 : i64, shift = 22 : i64, lhs_multiplier = 22668 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64, pre_shift = 8 : i64, relu} : (tensor<1x1x2x3xi8>, tensor<1x1x2x3xi8>) -> tensor<1x1x2x3xi8> loc(fused["add", "relu"])
    %3 = fixed.dequantize %2 {scale = 0.007592125984251968 : f64} : tensor<1x1x2x3xi8> -> tensor<1x1x2x3xf32>
    func.return %3 : tensor<1x1x2x3xf32>
  }
}

// CHECK:      isa.io {name = "a", direction = "input", {{.*}} ddr_addr = [[A:[0-9]+]] : i64}
// CHECK-NEXT: isa.io {name = "b", direction = "input", {{.*}} ddr_addr = [[B:[0-9]+]] : i64}
// CHECK-NEXT: isa.io {name = "sum", direction = "output", {{.*}} ddr_addr = [[SUM:[0-9]+]] : i64}
// CHECK-NEXT: isa.load {layout = NHWC, elem_log2 = 0, sram_addr = [[SA:[0-9]+]], ddr_addr = [[A]], d0 = 2, d1 = 3, d2 = 1,
// CHECK-NEXT: isa.load {layout = NHWC, elem_log2 = 0, sram_addr = [[SB:[0-9]+]], ddr_addr = [[B]], d0 = 2, d1 = 3, d2 = 1,
// CHECK-NEXT: isa.eltwise {op = add, b_broadcast = none, relu = 1, stage16 = 1, a_addr = [[SA]], b_addr = [[SB]], out_addr = [[SA]], h = 2, w = 3, c = 1, a_multiplier = 22668, a_shift = 0, b_multiplier = 16384, b_shift = -1, out_multiplier = 26274, out_shift = 22, pre_shift = 8} loc(fused["add", "relu"])
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = [[SA]], ddr_addr = [[SUM]], d0 = 2, d1 = 3, d2 = 1,
// CHECK-NEXT: isa.sync {halt = 1, token = 0}

// -----

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x3x2x2xf32> {nn.name = "x"}, %g: tensor<1x3x1x1xf32> {nn.name = "gate"}) -> (tensor<1x3x2x2xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.01 : f64} : tensor<1x3x2x2xf32> -> tensor<1x3x2x2xi8>
    %1 = fixed.quantize %g {scale = 0.01 : f64} : tensor<1x3x1x1xf32> -> tensor<1x3x1x1xi8>
    %2 = npu.eltwise "mul" %0, %1 {multiplier = 20972 : i64, shift = 21 : i64} : (tensor<1x3x2x2xi8>, tensor<1x3x1x1xi8>) -> tensor<1x3x2x2xi8> loc("se_mul")
    %3 = fixed.dequantize %2 {scale = 0.01 : f64} : tensor<1x3x2x2xi8> -> tensor<1x3x2x2xf32>
    func.return %3 : tensor<1x3x2x2xf32>
  }
}

// The full-size operand is a, read in the host's NCHW order (the LOAD transposes it); the gate
// is read once per channel chunk.
// CHECK:      isa.load {layout = NHWC, {{.*}} sram_addr = [[G:[0-9]+]], {{.*}} d0 = 1, d1 = 1, d2 = 3,
// CHECK-NEXT: isa.load {layout = NCHW, {{.*}} sram_addr = [[SX:[0-9]+]], ddr_addr = 0, d0 = 3, d1 = 2, d2 = 2,
// CHECK-NEXT: isa.eltwise {op = mul, b_broadcast = channel, relu = 0, stage16 = 0, a_addr = [[SX]], b_addr = [[G]], out_addr = [[SX]], h = 2, w = 2, c = 3, a_multiplier = 0, a_shift = 0, b_multiplier = 0, b_shift = 0, out_multiplier = 20972, out_shift = 21, pre_shift = 0} loc("se_mul")
