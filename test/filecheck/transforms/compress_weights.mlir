// RUN: xnpu-opt %s -p 'compress-weights{bits=2 step=0.125 min-elements=0}' | filecheck %s
// RUN: xnpu-opt %s -p 'compress-weights{bits=2 step=0.125 min-elements=0 exclude="fc0"}' | filecheck %s --check-prefix=EXCLUDE
// RUN: xnpu-opt %s -p 'compress-weights{bits=2 step=0.125 min-elements=5}' | filecheck %s --check-prefix=SMALL
// RUN: xnpu-opt %s -p 'compress-weights{bits=2}' | filecheck %s --check-prefix=DEFAULT

// b = 2, l = 0.125: one positive point per layer. conv0 has a zero, so entry 0 is 0
// (the zero rule) and its one log point is the largest q: ln 1 = 0 (0.5 has q = -6, and
// maps to it). Dictionary [0, 1, -0, -1]; one per-tensor scale 1/127; int8 [0, 127, 0, -127].

func.func @layers(%x: tensor<1x2x1x1xf32>) -> tensor<1x2xf32> {
  %w = nn.constant dense<[[[[1.0]], [[-1.0]]], [[[0.5]], [[0.0]]]]> : tensor<2x2x1x1xf32>
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x1x1xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x1x1xf32> loc("conv0")
  %f = nn.flatten %y {axis = 1 : i64} : tensor<1x2x1x1xf32> -> tensor<1x2xf32>
  %b = nn.constant dense<[[0.25, -4.0], [4.0, 2.0]]> : tensor<2x2xf32>
  %z = nn.gemm %f, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32> loc("fc0")
  func.return %z : tensor<1x2xf32>
}

// CHECK:      nn.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}-1.000000e+00]]], {{\[\[\[}}1.000000e+00]], {{\[\[}}0.000000e+00]]]]> : tensor<2x2x1x1xf32>
// CHECK:      nn.conv2d
// CHECK-SAME: nn.weight_scales = array<f32: 0.00787401572>, nn.codebook_bits = 2 : i64, nn.codebook = array<i8: 0, 127, 0, -127>
// No zeros in fc0: both positive entries are log points, the two largest q: round(ln 4 / l) = 11,
// round(ln 2 / l) = 6 (0.25 has q = -11 and maps to 6). Dictionary exp(l q): [3.955, 2.117, -3.955,
// -2.117]; scale 3.955/127; int8 [127, 68, -127, -68].
// CHECK:      nn.constant dense<{{\[\[}}2.117000e+00, -3.95507669], [3.95507669, 2.117000e+00]]> : tensor<2x2xf32>
// CHECK:      nn.gemm
// CHECK-SAME: nn.weight_scales = array<f32: 0.0311423354>, nn.codebook_bits = 2 : i64, nn.codebook = array<i8: 127, 68, -127, -68>

// EXCLUDE:     nn.conv2d {{.*}}nn.codebook_bits = 2
// EXCLUDE:     nn.constant dense<{{\[\[}}2.500000e-01, -4.000000e+00]
// EXCLUDE-NOT: nn.codebook

// SMALL-NOT: nn.codebook

// By default the step is fitted per layer and layers under 1000 weights stay int8: none here.
// DEFAULT-NOT: nn.codebook
