// xnpu-quantize --bias-correction takes the mean error of each int8 weight column out of the
// gemm's int32 bias (calibration's nn.input_mean); without it the bias stays the float one. Column 0's weights (1, 0, 1, 0)
// are exact at s_w = 1/127; column 1's 1 rounds to 64 at s_w = 2/127 (1 + 1/127), so on the
// calibration samples' positive mean of relu(x)[1] it adds a positive error: its correction is
// negative, and column 0's is zero.
// RUN: xnpu-quantize %s --calibration %S/../../transforms/Inputs/calibrate_tiny.npy --bias-correction -o %t && filecheck %s < %t
// RUN: xnpu-quantize %s --calibration %S/../../transforms/Inputs/calibrate_tiny.npy -o %t.plain && filecheck %s --check-prefix=PLAIN < %t.plain

func.func @main(%x: tensor<1x4xf32> {nn.name = "x"}) -> (tensor<1x2xf32> {nn.name = "y"}) {
  %w = nn.constant dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 2.0]]> : tensor<4x2xf32>
  %r = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu")
  %y = nn.gemm %r, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32> loc("gemm")
  func.return %y : tensor<1x2xf32>
}

// CHECK:      fixed.constant dense<{{\[\[}}127, 0], [0, 64], [127, 0], [0, 127]]> : tensor<4x2xi8>
// CHECK-NEXT: fixed.constant dense<[0, -{{[1-9][0-9]*}}]> : tensor<2xi32>
// CHECK-NEXT: fixed.gemm

// PLAIN:      fixed.constant dense<{{\[\[}}127, 0], [0, 64], [127, 0], [0, 127]]> : tensor<4x2xi8>
// PLAIN-NEXT: fixed.constant dense<0> : tensor<2xi32>
// PLAIN-NEXT: fixed.gemm
