// RUN: xnpu-opt %s --target=%S/../../../python/data/xnpu_test_16k.toml -p npu-tile | filecheck %s

// On a 16 KiB SRAM an edge pad and an interleave go in bands of source rows through one
// staging buffer: a row of 64 pixels x 32 channels is 2 KiB, so 8 rows per band (the pad's
// source is 64 pixels wide; the interleave's phase windows are 64 wide too, three of them
// read from the 65-wide pad at their offsets). Smaller channel chunks would only add DMAs.

builtin.module {
  func.func @main(%a: tensor<1x32x64x64xf32> {nn.name = "x"}) -> (tensor<1x32x128x128xf32> {nn.name = "y"}) {
    %x = fixed.quantize %a {scale = 0.1 : f64} : tensor<1x32x64x64xf32> -> tensor<1x32x64x64xi8>
    %r = npu.relayout %x "NHWC" : tensor<1x32x64x64xi8> -> tensor<1x32x64x64xi8>
    %p = npu.pad "edge" %r {pads = array<i64: 0, 0, 1, 1>} : tensor<1x32x64x64xi8> -> tensor<1x32x65x65xi8> loc("pad")
    %n = npu.interleave %r, %p, %p, %p {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 1, 1, 0, 1, 1>} : (tensor<1x32x64x64xi8>, tensor<1x32x65x65xi8>, tensor<1x32x65x65xi8>, tensor<1x32x65x65xi8>) -> tensor<1x32x128x128xi8> loc("interleave")
    %o = npu.relayout %n "NCHW" : tensor<1x32x128x128xi8> -> tensor<1x32x128x128xi8>
    %0 = fixed.dequantize %o {scale = 0.1 : f64} : tensor<1x32x128x128xi8> -> tensor<1x32x128x128xf32>
    func.return %0 : tensor<1x32x128x128xf32>
  }
}

// CHECK: npu.pad "edge" {{.*}}npu.tile = array<i64: 8, 64, 32>
// CHECK: npu.interleave {{.*}}npu.tile = array<i64: 8, 64, 32>
