// RUN: xnpu-opt %s -p 'npu-plan-sram,npu-allocate,lower-npu-to-isa' | filecheck %s

// A conv whose weights compress-weights stored as 2-bit codebook ids stays compressed in the
// constant image: each of its 32 output channels is a row of 3*3*5 = 45 ids in 12 bytes (every
// weight is 3, id 3: eleven bytes FF and a last 03), and its 4-entry dictionary follows at 384,
// the next 64-byte boundary. Tiled into two chunks of 16
// output channels (the tiling is given), each chunk's weight LOAD decodes its own rows (the
// second starts 16 rows = 192 bytes in) through the dictionary into the padded OHWI tile.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x5x4x4xf32> {nn.name = "x"}) -> (tensor<1x32x4x4xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 0.5 : f64} : tensor<1x5x4x4xf32> -> tensor<1x5x4x4xi8>
    %1 = fixed.constant dense<3> : tensor<32x5x3x3xi8> {fixed.codebook_bits = 2 : i64, fixed.codebook = array<i8: 0, -3, 1, 3>} loc("conv")
    %2 = npu.conv %0, %1 {npu.layout = "NHWC", npu.tile = array<i64: 4, 4, 16>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 17>} : (tensor<1x5x4x4xi8>, tensor<32x5x3x3xi8>) -> tensor<1x32x4x4xi8> loc("conv")
    %3 = npu.relayout %2 "NCHW" {npu.layout = "NCHW", npu.tile = array<i64: 4, 4, 32>} : tensor<1x32x4x4xi8> -> tensor<1x32x4x4xi8>
    %4 = fixed.dequantize %3 {scale = 0.25 : f64} : tensor<1x32x4x4xi8> -> tensor<1x32x4x4xf32>
    func.return %4 : tensor<1x32x4x4xf32>
  }
}

// CHECK:      builtin.module attributes {isa.target = "xnpu_default"
// CHECK-NEXT:   isa.constants dense<"0x{{(FFFFFFFFFFFFFFFFFFFFFF03)+}}00FD0103{{[0-9A-F]*}}"> : tensor<{{[0-9]+}}xi8>
// CHECK:        isa.load {layout = OHWI, elem_log2 = 0, sram_addr = {{[0-9]+}}, ddr_addr = 0, d0 = 16, d1 = 3, d2 = 3, d3 = 5, {{.*}}codebook_bits = 2, dictionary_addr = 384
// CHECK:        isa.conv
// CHECK:        isa.load {layout = OHWI, elem_log2 = 0, sram_addr = {{[0-9]+}}, ddr_addr = 192, d0 = 16, d1 = 3, d2 = 3, d3 = 5, {{.*}}codebook_bits = 2, dictionary_addr = 384
// CHECK-NOT:    codebook_bits
