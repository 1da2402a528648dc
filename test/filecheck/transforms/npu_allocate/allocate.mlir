// RUN: xnpu-opt %s --split-input-file -p npu-allocate | filecheck %s

// Input: npu IR with layouts and tiles (as npu-assign-layout and npu-tile leave it).
// Three 3x3 convs in a chain, then the copy of the last map to NCHW for the host.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x1x4x4xf32> {nn.name = "x"}) -> (tensor<1x2x4x4xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.5 : f64} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xi8>
    %w1 = fixed.constant dense<1> : tensor<2x1x3x3xi8> {fixed.codebook_bits = 1 : i64, fixed.codebook = array<i8: 0, 1>}
    %b1 = fixed.constant dense<[1, 2]> : tensor<2xi32>
    %a = npu.conv %0, %w1, %b1 {npu.layout = "NHWC", npu.tile = array<i64: 4, 4, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384, 20000>, shift = array<i64: 15, 16>} : (tensor<1x1x4x4xi8>, tensor<2x1x3x3xi8>, tensor<2xi32>) -> tensor<1x2x4x4xi8> loc("c1")
    %w2 = fixed.constant dense<1> : tensor<2x2x3x3xi8>
    %b = npu.conv %a, %w2 {npu.layout = "NHWC", npu.tile = array<i64: 4, 4, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 17>} : (tensor<1x2x4x4xi8>, tensor<2x2x3x3xi8>) -> tensor<1x2x4x4xi8> loc("c2")
    %w3 = fixed.constant dense<1> : tensor<2x2x3x3xi8>
    %c = npu.conv %b, %w3 {npu.layout = "NHWC", npu.tile = array<i64: 4, 4, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 17>} : (tensor<1x2x4x4xi8>, tensor<2x2x3x3xi8>) -> tensor<1x2x4x4xi8> loc("c3")
    %r = npu.relayout %c "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 4, 4, 2>} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8>
    %y = fixed.dequantize %r {scale = 0.5 : f64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xf32>
    func.return %y : tensor<1x2x4x4xf32>
  }
}

// The constant image: c1's weights are all in their 1-bit codebook, so they stay compressed:
// two rows (output channels) of nine 1-bit ids, each row two bytes (FF 01), at 0, and the
// dictionary (00 01) at 64; its int32 biases at 128 and its two rescale records at 192; c2's
// weights at 256 and record at 320; c3's weights and record are the same bytes as c2's,
// stored once. Activations start at the next 64-byte boundary above the image (384).
// CHECK:      builtin.module attributes {npu.target = "xnpu_default", npu.activation_bytes = 160 : i64} {
// CHECK-NEXT:   isa.constants dense<"0xFF01FF01{{0+}}0001{{0+}}0100000002000000{{[0-9A-F]+}}"> : tensor<324xi8>
// CHECK-NEXT:   func.func @main

// The input is pinned for the whole run (the host's copy); a (live at layers 0-1) and b
// (1-2) get the next free addresses; c (2-3) reuses a's bytes, which died at layer 1; the
// output copy (3 to the end, pinned) reuses b's.
// CHECK:      fixed.quantize %x {npu.layout = "NCHW", npu.ddr = 384 : i64,
// CHECK:      %a = npu.conv %0, %w1, %b1 {npu.layout = "NHWC", npu.tile = array<i64: 4, 4, 2>, npu.codebook_bits = 1 : i64,
// CHECK-SAME:   npu.constants = {weights = 0 : i64, dictionary = 64 : i64, bias = 128 : i64, records = 192 : i64}, npu.ddr = 448 : i64,
// CHECK:      %b = npu.conv %a, %w2 {{{.*}}npu.constants = {weights = 256 : i64, records = 320 : i64}, npu.ddr = 512 : i64,
// CHECK:      %c = npu.conv %b, %w3 {{{.*}}npu.constants = {weights = 256 : i64, records = 320 : i64}, npu.ddr = 448 : i64,
// CHECK:      %r = npu.relayout %c "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 4, 4, 2>, npu.ddr = 512 : i64}

// -----

// Views share their source's bytes: seed 002's kernels (the gate reshaped to C x 1 x 1 x 1)
// are read by the CONV's weight LOAD at the gate's own address, and the gate lives until
// that conv. An int8 constant read by an ELTWISE is in the image, at its offset, in NHWC
// order, beside the conv's rescale record and the average pool's per-position records.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x2x2xf32> {nn.name = "x"}, %g: tensor<1x2x1x1xf32> {nn.name = "gate"}) -> (tensor<1x8xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.01 : f64} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xi8>
    %1 = fixed.quantize %g {npu.layout = "NCHW", scale = 0.01 : f64} : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xi8>
    %2 = npu.relayout %0 "NHWC" {npu.layout = "NHWC", npu.tile = array<i64: 2, 2, 2>} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8>
    %k = npu.reshape %1 {npu.layout = "NCHW"} : tensor<1x2x1x1xi8> -> tensor<2x1x1x1xi8>
    %m = npu.conv %2, %k {npu.layout = "NHWC", npu.tile = array<i64: 2, 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64, multiplier = array<i64: 20972>, shift = array<i64: 21>} : (tensor<1x2x2x2xi8>, tensor<2x1x1x1xi8>) -> tensor<1x2x2x2xi8> loc("se_mul")
    %c = fixed.constant dense<[[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]]> : tensor<1x2x2x2xi8> {npu.layout = "NHWC"}
    %s = npu.eltwise "add" %m, %c {npu.layout = "NHWC", npu.tile = array<i64: 2, 2, 2>, multiplier = 16384 : i64, shift = 15 : i64, lhs_multiplier = 16384 : i64, lhs_shift = 14 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 14 : i64, clamp = array<i64: 0, 64>} : (tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>) -> tensor<1x2x2x2xi8> loc("add")
    %a = npu.pool "avg" %s {npu.layout = "NHWC", npu.tile = array<i64: 2, 2, 2>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, multiplier = array<i64: 16384, 16384, 16384, 16384>, shift = array<i64: 16, 15, 15, 14>} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8> loc("avg")
    %r = npu.relayout %a "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 2, 2, 2>} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8>
    %v = npu.reshape %r {npu.layout = "NHWC"} : tensor<1x2x2x2xi8> -> tensor<1x8xi8>
    %y = fixed.dequantize %v {scale = 0.01 : f64} : tensor<1x8xi8> -> tensor<1x8xf32>
    func.return %y : tensor<1x8xf32>
  }
}

// CHECK:      isa.constants dense<"0xEC511500{{0+}}0105020603070408{{0+}}0040100000400F0000400F0000400E00"> : tensor<144xi8>
// CHECK:      %1 = fixed.quantize %g {npu.layout = "NCHW", npu.ddr = [[GATE:[0-9]+]] : i64,
// CHECK:      %k = npu.reshape %1 {npu.layout = "NCHW", npu.ddr = [[GATE]] : i64}
// CHECK:      %m = npu.conv %2, %k {{{.*}}npu.constants = {records = 0 : i64}
// CHECK:      %c = fixed.constant {{.*}} {npu.layout = "NHWC", npu.ddr = 64 : i64}
// CHECK:      %a = npu.pool "avg" %s {{{.*}}npu.constants = {records = 128 : i64},
// CHECK:      %r = npu.relayout %a "NCHW" {{{.*}}npu.ddr = [[R:[0-9]+]] : i64}
// CHECK:      %v = npu.reshape %r {npu.layout = "NHWC", npu.ddr = [[R]] : i64}
