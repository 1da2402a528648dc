// RUN: xnpu-opt %s --split-input-file -p npu-assign-layout | filecheck %s

// The input arrives NCHW from the host; the conv and the pool read it as it is (their LOADs
// transpose it tile by tile), so no copy is inserted for them; the one-channel map %one is
// in both orders anyway; the 4-D outputs leave NCHW through one relayout each.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}, %o: tensor<1x1x4x4xf32> {nn.name = "one"}) -> (tensor<1x4x4x4xf32> {nn.name = "y"}, tensor<1x2x2x2xf32> {nn.name = "p"}, tensor<1x1x4x4xf32> {nn.name = "t"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi8>
    %one = fixed.quantize %o {scale = 0.5 : f64} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xi8>
    %w = fixed.constant dense<1> : tensor<4x2x3x3xi8> loc("conv")
    %y = npu.conv %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>, relu} : (tensor<1x2x4x4xi8>, tensor<4x2x3x3xi8>) -> tensor<1x4x4x4xi8> loc(fused["conv", "relu"])
    %p = npu.pool "max" %0 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8> loc("pool")
    %t = npu.clamp %one {min = -64 : i64, max = 64 : i64} : tensor<1x1x4x4xi8> -> tensor<1x1x4x4xi8> loc("clip")
    %dy = fixed.dequantize %y {scale = 0.25 : f64} : tensor<1x4x4x4xi8> -> tensor<1x4x4x4xf32>
    %dp = fixed.dequantize %p {scale = 0.5 : f64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xf32>
    %dt = fixed.dequantize %t {scale = 0.5 : f64} : tensor<1x1x4x4xi8> -> tensor<1x1x4x4xf32>
    func.return %dy, %dp, %dt : tensor<1x4x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x1x4x4xf32>
  }
}

// CHECK:      %0 = fixed.quantize %x {npu.layout = "NCHW", scale = 5.000000e-01 : f64}
// CHECK-NEXT: %one = fixed.quantize %o {npu.layout = "NCHW", scale = 5.000000e-01 : f64}
// CHECK-NEXT: %w = fixed.constant dense<1> : tensor<4x2x3x3xi8> loc("conv")
// CHECK-NEXT: %y = npu.conv %0, %w {npu.layout = "NHWC", {{.*}}loc(fused["conv", "relu"])
// CHECK-NEXT: %p = npu.pool "max" %0 {npu.layout = "NHWC", {{.*}}loc("pool")
// CHECK-NEXT: %t = npu.clamp %one {npu.layout = "NHWC", min = -64 : i64, max = 64 : i64}
// CHECK-NEXT: %1 = npu.relayout %y "NCHW" {npu.layout = "NCHW"} : tensor<1x4x4x4xi8> -> tensor<1x4x4x4xi8>
// CHECK-NEXT: %dy = fixed.dequantize %1
// CHECK-NEXT: %2 = npu.relayout %p "NCHW"
// CHECK-NEXT: %dp = fixed.dequantize %2
// CHECK-NEXT: %dt = fixed.dequantize %t
// CHECK-NEXT: func.return %dy, %dp, %dt

// -----

// A reshape is a view of row-major bytes: the NCHW input reshaped needs no copy (and the conv
// reads it as it is); the conv's NHWC map flattened for a gemm is first copied to NCHW order. A 1 x K matrix is N x 1 x K,
// whose row-major order is NHWC, so the gemm result leaves as it is.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x8x4x4xf32> {nn.name = "x"}) -> (tensor<1x5xf32> {nn.name = "z"}) {
    %0 = fixed.quantize %x {scale = 0.1 : f64} : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xi8>
    %r = npu.reshape %0 : tensor<1x8x4x4xi8> -> tensor<1x2x8x8xi8> loc("reshape")
    %w = fixed.constant dense<1> : tensor<4x2x3x3xi8>
    %y = npu.conv %r, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 17>} : (tensor<1x2x8x8xi8>, tensor<4x2x3x3xi8>) -> tensor<1x4x8x8xi8> loc("conv")
    %f = npu.reshape %y : tensor<1x4x8x8xi8> -> tensor<1x256xi8> loc("flatten")
    %w2 = fixed.constant dense<1> : tensor<5x256xi8>
    %z = npu.conv %f, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 20>} : (tensor<1x256xi8>, tensor<5x256xi8>) -> tensor<1x5xi8> loc("fc")
    %dz = fixed.dequantize %z {scale = 0.1 : f64} : tensor<1x5xi8> -> tensor<1x5xf32>
    func.return %dz : tensor<1x5xf32>
  }
}

// CHECK:      %r = npu.reshape %0 {npu.layout = "NCHW"} : tensor<1x8x4x4xi8> -> tensor<1x2x8x8xi8> loc("reshape")
// CHECK:      %y = npu.conv %r, %w {npu.layout = "NHWC",
// CHECK-NEXT: %1 = npu.relayout %y "NCHW" {npu.layout = "NCHW"} {{.*}} loc("flatten")
// CHECK-NEXT: %f = npu.reshape %1 {npu.layout = "NHWC"} : tensor<1x4x8x8xi8> -> tensor<1x256xi8> loc("flatten")
// CHECK:      %z = npu.conv %f, %w2 {npu.layout = "NHWC",
// CHECK-NEXT: %dz = fixed.dequantize %z

// -----

// Transposes between NCHW and NHWC are views: x (NCHW) transposed to N x H x W x C is the
// bytes of its NHWC copy read row-major; that transposed back is an NHWC map again (the
// conv reads it without a copy); the conv's NHWC map transposed to N x H x W x C is its
// own bytes read row-major, so the output needs no copy either.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x3x6x7xf32> {nn.name = "x"}) -> (tensor<1x6x7x4xf32> {nn.name = "z"}, tensor<1x6x7x3xf32> {nn.name = "t"}) {
    %0 = fixed.quantize %x {scale = 0.1 : f64} : tensor<1x3x6x7xf32> -> tensor<1x3x6x7xi8>
    %t = npu.transpose %0 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x6x7xi8> -> tensor<1x6x7x3xi8> loc("to_nhwc")
    %u = npu.transpose %t {perm = array<i64: 0, 3, 1, 2>} : tensor<1x6x7x3xi8> -> tensor<1x3x6x7xi8> loc("to_nchw")
    %w = fixed.constant dense<1> : tensor<4x3x3x3xi8>
    %y = npu.conv %u, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 17>} : (tensor<1x3x6x7xi8>, tensor<4x3x3x3xi8>) -> tensor<1x4x6x7xi8> loc("conv")
    %z = npu.transpose %y {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x6x7xi8> -> tensor<1x6x7x4xi8> loc("out_nhwc")
    %dz = fixed.dequantize %z {scale = 0.1 : f64} : tensor<1x6x7x4xi8> -> tensor<1x6x7x4xf32>
    %dt = fixed.dequantize %t {scale = 0.1 : f64} : tensor<1x6x7x3xi8> -> tensor<1x6x7x3xf32>
    func.return %dz, %dt : tensor<1x6x7x4xf32>, tensor<1x6x7x3xf32>
  }
}

// CHECK:      %1 = npu.relayout %0 "NHWC" {npu.layout = "NHWC"} {{.*}} loc("to_nhwc")
// CHECK-NEXT: %t = npu.transpose %1 {npu.layout = "NCHW", perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %u = npu.transpose %t {npu.layout = "NHWC", perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: %w = fixed.constant
// CHECK-NEXT: %y = npu.conv %u, %w {npu.layout = "NHWC",
// CHECK-NEXT: %z = npu.transpose %y {npu.layout = "NCHW", perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %dz = fixed.dequantize %z
// CHECK-NEXT: %dt = fixed.dequantize %t
// CHECK-NOT:  npu.relayout

// -----

// Seed 002's activation kernels: the gate reshaped to C x 1 x 1 x 1 is read only as the
// depthwise conv's kernels, a view of its row-major bytes (a 1 x C x 1 x 1 map: both orders
// coincide, no copy). An int8 constant read by an ELTWISE is stored NHWC, as its reader wants.

builtin.module attributes {npu.target = "xnpu_lite"} {
  func.func @main(%x: tensor<1x3x2x2xf32> {nn.name = "x"}, %g: tensor<1x3x1x1xf32> {nn.name = "gate"}) -> (tensor<1x3x2x2xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.01 : f64} : tensor<1x3x2x2xf32> -> tensor<1x3x2x2xi8>
    %1 = fixed.quantize %g {scale = 0.01 : f64} : tensor<1x3x1x1xf32> -> tensor<1x3x1x1xi8>
    %k = npu.reshape %1 : tensor<1x3x1x1xi8> -> tensor<3x1x1x1xi8> loc("se_mul")
    %m = npu.conv %0, %k {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64, multiplier = array<i64: 20972>, shift = array<i64: 21>} : (tensor<1x3x2x2xi8>, tensor<3x1x1x1xi8>) -> tensor<1x3x2x2xi8> loc("se_mul")
    %c = fixed.constant dense<[[[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]]> : tensor<1x3x2x2xi8>
    %s = npu.eltwise "add" %m, %c {multiplier = 16384 : i64, shift = 15 : i64, lhs_multiplier = 16384 : i64, lhs_shift = 14 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 14 : i64} : (tensor<1x3x2x2xi8>, tensor<1x3x2x2xi8>) -> tensor<1x3x2x2xi8> loc("add")
    %d = fixed.dequantize %s {scale = 0.01 : f64} : tensor<1x3x2x2xi8> -> tensor<1x3x2x2xf32>
    func.return %d : tensor<1x3x2x2xf32>
  }
}

// CHECK:      %1 = fixed.quantize %g {npu.layout = "NCHW",
// CHECK-NEXT: %k = npu.reshape %1 {npu.layout = "NCHW"} : tensor<1x3x1x1xi8> -> tensor<3x1x1x1xi8>
// CHECK-NEXT: %m = npu.conv %0, %k {npu.layout = "NHWC",
// CHECK-NEXT: %c = fixed.constant {{.*}} {npu.layout = "NHWC"}
// CHECK-NEXT: %s = npu.eltwise "add" %m, %c {npu.layout = "NHWC",
