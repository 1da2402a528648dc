// RUN: xnpu-opt %s --target=%S/../../../python/data/xnpu_test_16k.toml -p npu-tile | filecheck %s

// On a 16 KiB SRAM (channel alignment 16) every layer is cut into tiles whose working set
// fits: npu.tile = array<i64: rows, cols, chunk> (output rows, columns and channels per tile).

builtin.module {
  func.func @main(%x: tensor<1x1x64x64xf32> {nn.name = "x"}) -> (tensor<1x64x16x16xf32> {nn.name = "y"}, tensor<1x16x64x64xf32> {nn.name = "z"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x1x64x64xf32> -> tensor<1x1x64x64xi8>
    %w1 = fixed.constant dense<1> : tensor<8x1x3x3xi8>
    %1 = npu.conv %0, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x1x64x64xi8>, tensor<8x1x3x3xi8>) -> tensor<1x8x64x64xi8> loc("conv1")
    %2 = npu.pool "max" %1 {kernel_shape = array<i64: 4, 4>, strides = array<i64: 4, 4>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x8x64x64xi8> -> tensor<1x8x16x16xi8> loc("pool")
    %w2 = fixed.constant dense<1> : tensor<64x8x3x3xi8>
    %3 = npu.conv %2, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x8x16x16xi8>, tensor<64x8x3x3xi8>) -> tensor<1x64x16x16xi8> loc("wide")
    %4 = npu.eltwise "add" %1, %1 {multiplier = 16384 : i64, shift = 15 : i64, lhs_multiplier = 16384 : i64, lhs_shift = 14 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 14 : i64} : (tensor<1x8x64x64xi8>, tensor<1x8x64x64xi8>) -> tensor<1x8x64x64xi8> loc("add")
    %5 = npu.concat %4, %1 {axis = 1 : i64} : (tensor<1x8x64x64xi8>, tensor<1x8x64x64xi8>) -> tensor<1x16x64x64xi8> loc("cat")
    %6 = npu.relayout %5 "NCHW" : tensor<1x16x64x64xi8> -> tensor<1x16x64x64xi8>
    %7 = npu.relayout %3 "NCHW" : tensor<1x64x16x16xi8> -> tensor<1x64x16x16xi8>
    %d1 = fixed.dequantize %7 {scale = 0.5 : f64} : tensor<1x64x16x16xi8> -> tensor<1x64x16x16xf32>
    %d2 = fixed.dequantize %6 {scale = 0.5 : f64} : tensor<1x16x64x64xi8> -> tensor<1x16x64x64xf32>
    func.return %d1, %d2 : tensor<1x64x16x16xf32>, tensor<1x16x64x64xf32>
  }
}

// Each tiling is the cheapest by an estimate of the layer's cycles with its DMA overlapping
// its unit (npu_tiling.pipelined_cycles: the first tile's load, then per chunk the longer of
// its DMA and its computation, then the last store), among those whose working set fits with
// two slots for every streamed tile buffer.
// conv1: 64 x 64 outputs of 16 padded lanes are 64 KiB: bands of 2 whole rows (small first
// and last tiles, few instructions), all 8 output channels in one chunk.
// CHECK:      npu.conv {{.*}}npu.tile = array<i64: 2, 64, 8>{{.*}} loc("conv1")
// The pool reads 4 x 4 input pixels per output: bands of 2 output rows and 6 columns.
// CHECK-NEXT: npu.pool "max" {{.*}}npu.tile = array<i64: 2, 6, 8>{{.*}} loc("pool")
// 64 output channels cut into chunks of 16 (the weights of a chunk and the next one's beside
// the tiles), all 16 rows in bands of 4 columns.
// CHECK:      npu.conv {{.*}}npu.tile = array<i64: 16, 4, 16>{{.*}} loc("wide")
// ELTWISE: whole rows (a and b; the result overwrites a).
// CHECK-NEXT: npu.eltwise "add" {{.*}}npu.tile = array<i64: 4, 64, 8>{{.*}} loc("add")
// A concat moves each part through SRAM in bands of rows (a row of 8 channels padded to 16: 1 KiB).
// CHECK-NEXT: npu.concat {{.*}}npu.tile = array<i64: 16, 16>{{.*}} loc("cat")
// A relayout of a map larger than SRAM: one channel plane at a time (chunk 1), bands of rows;
// a map that fits is one LOAD and one STORE (tile = the whole map).
// CHECK-NEXT: npu.relayout {{.*}} "NCHW" {npu.tile = array<i64: 16, 64, 1>}
// CHECK-NEXT: npu.relayout {{.*}} "NCHW" {npu.tile = array<i64: 16, 16, 64>}
