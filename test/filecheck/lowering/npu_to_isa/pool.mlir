// RUN: xnpu-opt %s -p 'npu-assign-layout,npu-tile,npu-plan-sram,npu-allocate,lower-npu-to-isa' | filecheck %s

// max pool 3x3/2 with padding 1, then a global average pool whose rescale is the POOL's
// immediate (M, shift), then a gemm as a 1x1 CONV on the flattened 1 x 8 vector (free:
// a 1x1 map is already in NCHW order).

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x8x5x5xf32> {nn.name = "x"}) -> (tensor<1x2xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.1 : f64} : tensor<1x8x5x5xf32> -> tensor<1x8x5x5xi8>
    %1 = npu.pool "max" %0 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x5x5xi8> -> tensor<1x8x3x3xi8> loc("maxpool")
    %2 = npu.pool "global_avg" %1 {multiplier = array<i64: 29127>, shift = array<i64: 18>} : tensor<1x8x3x3xi8> -> tensor<1x8x1x1xi8> loc("gap")
    %3 = npu.reshape %2 : tensor<1x8x1x1xi8> -> tensor<1x8xi8> loc("flatten")
    %4 = fixed.constant dense<2> : tensor<2x8xi8> loc("fc")
    %5 = npu.conv %3, %4 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 16>} : (tensor<1x8xi8>, tensor<2x8xi8>) -> tensor<1x2xi8> loc("fc")
    %6 = fixed.dequantize %5 {scale = 0.2 : f64} : tensor<1x2xi8> -> tensor<1x2xf32>
    func.return %6 : tensor<1x2xf32>
  }
}

// The pool reads the input as the host wrote it (NCHW): its LOAD transposes.
// CHECK:      isa.load {layout = NCHW, {{.*}} sram_addr = [[IN:[0-9]+]], {{.*}} d0 = 8, d1 = 5, d2 = 5,
// CHECK-NEXT: isa.pool {kind = max, per_position = 0, in_addr = [[IN]], out_addr = [[OUT:[0-9]+]], rescale_addr = 0, in_h = 5, in_w = 5, c = 8, out_h = 3, out_w = 3, kernel_h = 3, kernel_w = 3, stride_h = 2, stride_w = 2, pad_top = 1, pad_left = 1, pad_bottom = 1, pad_right = 1, out_multiplier = 0, out_shift = 0} loc("maxpool")
// CHECK-NEXT: isa.store {layout = NHWC, {{.*}} sram_addr = [[OUT]], ddr_addr = [[P:[0-9]+]], d0 = 3, d1 = 3, d2 = 8,
// CHECK-NEXT: isa.load {layout = NHWC, {{.*}} ddr_addr = [[P]], d0 = 3, d1 = 3, d2 = 8,
// CHECK-NEXT: isa.pool {kind = global_avg, per_position = 0, {{.*}} in_h = 3, in_w = 3, c = 8, out_h = 1, out_w = 1, kernel_h = 0, kernel_w = 0, stride_h = 0, stride_w = 0, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0, out_multiplier = 29127, out_shift = 18} loc("gap")
// CHECK-NEXT: isa.store {layout = NHWC, {{.*}} ddr_addr = [[G:[0-9]+]], d0 = 1, d1 = 1, d2 = 8,
// CHECK-NEXT: isa.load {layout = OHWI, {{.*}} d0 = 2, d1 = 1, d2 = 1, d3 = 8,
// CHECK-NEXT: isa.load {layout = RAW, elem_log2 = 0, {{.*}} d0 = 1, d1 = 4,
// CHECK-NEXT: isa.load {layout = NHWC, {{.*}} ddr_addr = [[G]], d0 = 1, d1 = 1, d2 = 8,
// CHECK-NEXT: isa.conv {depthwise = 0, relu = 0, per_channel = 0, bias = 0, {{.*}} in_h = 1, in_w = 1, in_c = 8, out_c = 2, kernel_h = 1, kernel_w = 1, {{.*}} loc("fc")
// CHECK-NEXT: isa.store {layout = NHWC, {{.*}} d0 = 1, d1 = 1, d2 = 2,
// CHECK-NEXT: isa.sync {halt = 1, token = 0}
