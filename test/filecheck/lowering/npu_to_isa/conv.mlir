// RUN: xnpu-opt %s -p 'npu-assign-layout,npu-tile,npu-plan-sram,npu-allocate,lower-npu-to-isa' | filecheck %s

// A 3x3 conv with a per-channel rescale and a relu (one npu.conv) on a 2-channel NCHW input
// becomes: the conv's weights (OHWI), biases and rescale records loaded from the constant
// image, the input loaded as the host wrote it (the DMA's NCHW layout transposes it into the
// padded NHWC tile), ONE CONV with the relu flag, its output stored NHWC, and a final
// NHWC -> NCHW copy for the host.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x4x4x4xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi8>
    %1 = fixed.constant dense<1> : tensor<4x2x3x3xi8> loc("conv")
    %2 = fixed.constant dense<[1, 2, 3, 4]> : tensor<4xi32> loc("conv")
    %3 = npu.conv %0, %1, %2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384, 16384, 20000, 30000>, shift = array<i64: 15, 16, 16, 17>, relu} : (tensor<1x2x4x4xi8>, tensor<4x2x3x3xi8>, tensor<4xi32>) -> tensor<1x4x4x4xi8> loc(fused["conv", "relu"])
    %4 = fixed.dequantize %3 {scale = 0.25 : f64} : tensor<1x4x4x4xi8> -> tensor<1x4x4x4xf32>
    func.return %4 : tensor<1x4x4x4xf32>
  }
}

// CHECK:      builtin.module attributes {isa.target = "xnpu_default"
// CHECK-NEXT:   isa.constants dense<"0x{{[0-9A-F]+}}"> : tensor<208xi8>
// CHECK-NEXT:   isa.io {name = "x", direction = "input", dtype = "int8", layout = "NCHW", shape = array<i64: 1, 2, 4, 4>, scale = 5.000000e-01 : f64, zero_point = 0 : i64, ddr_addr = [[IN:[0-9]+]] : i64}
// CHECK-NEXT:   isa.io {name = "y", direction = "output", dtype = "int8", layout = "NCHW", shape = array<i64: 1, 4, 4, 4>, scale = 2.500000e-01 : f64, zero_point = 0 : i64, ddr_addr = [[OUT:[0-9]+]] : i64}
// CHECK-NEXT:   isa.load {layout = OHWI, elem_log2 = 0, sram_addr = [[W:[0-9]+]], ddr_addr = 0, d0 = 4, d1 = 3, d2 = 3, d3 = 2, {{.*}} loc(fused["conv", "relu"])
// CHECK-NEXT:   isa.load {layout = RAW, elem_log2 = 2, sram_addr = [[B:[0-9]+]], ddr_addr = 128, d0 = 1, d1 = 4,
// CHECK-NEXT:   isa.load {layout = RAW, elem_log2 = 0, sram_addr = [[R:[0-9]+]], ddr_addr = 192, d0 = 1, d1 = 16,
// CHECK-NEXT:   isa.load {layout = NCHW, elem_log2 = 0, sram_addr = [[I:[0-9]+]], ddr_addr = [[IN]], d0 = 2, d1 = 4, d2 = 4, d3 = 0, ddr_row_stride = 0, ddr_pixel_stride = 0,
// CHECK-NEXT:   isa.conv {depthwise = 0, relu = 1, per_channel = 1, bias = 1, in_addr = [[I]], weight_addr = [[W]], bias_addr = [[B]], rescale_addr = [[R]], out_addr = [[O:[0-9]+]], in_h = 4, in_w = 4, in_c = 2, out_c = 4, kernel_h = 3, kernel_w = 3, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 1, pad_left = 1, pad_bottom = 1, pad_right = 1} loc(fused["conv", "relu"])
// CHECK-NEXT:   isa.store {layout = NHWC, elem_log2 = 0, sram_addr = [[O]], ddr_addr = [[Y:[0-9]+]], d0 = 4, d1 = 4, d2 = 4,
// CHECK-NEXT:   isa.load {layout = NHWC, elem_log2 = 0, sram_addr = [[S:[0-9]+]], ddr_addr = [[Y]], d0 = 4, d1 = 4, d2 = 4,
// CHECK-NEXT:   isa.store {layout = NCHW, elem_log2 = 0, sram_addr = [[S]], ddr_addr = [[OUT]], d0 = 4, d1 = 4, d2 = 4,
// CHECK-NEXT:   isa.sync {halt = 1, token = 0}
// CHECK-NEXT: }
