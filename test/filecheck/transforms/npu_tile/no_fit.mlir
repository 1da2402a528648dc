// RUN: not xnpu-opt %s --target=%S/../../../python/data/xnpu_test_16k.toml -p npu-tile 2>&1 | filecheck %s

// Input channels are never split, so the smallest tile of this conv still holds 16 output
// channels x 3 x 3 x 128 inputs = 18 KiB of weights: more than the 16 KiB SRAM. The error
// is one line naming the ONNX node and the target.

builtin.module {
  func.func @main(%x: tensor<1x128x8x8xf32> {nn.name = "x"}) -> (tensor<1x16x8x8xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x128x8x8xf32> -> tensor<1x128x8x8xi8>
    %w = fixed.constant dense<1> : tensor<16x128x3x3xi8>
    %1 = npu.conv %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 20>, relu} : (tensor<1x128x8x8xi8>, tensor<16x128x3x3xi8>) -> tensor<1x16x8x8xi8> loc(fused["/l2/c2/Conv", "/l2/Relu"])
    %2 = fixed.dequantize %1 {scale = 0.5 : f64} : tensor<1x16x8x8xi8> -> tensor<1x16x8x8xf32>
    func.return %2 : tensor<1x16x8x8xf32>
  }
}

// CHECK: xnpu-opt: error: {{.*}}no_fit.mlir: in pass 'npu-tile': /l2/c2/Conv, /l2/Relu: no tiling of this convolution fits the 16384-byte SRAM of xnpu_test_16k (input 8x8x128, output 8x8x16, kernel 3x3){{$}}
// CHECK-NOT: {{.}}
