// Bias correction: calibration's nn.input_mean (the mean of what each weight multiplies) times
// the error of the int8 weights comes out of the bias before it is rounded to int32 (R13).
// The weights of conv_relu.mlir: channel 0 w = [1, -2], s_w = 2/127, codes [64, -127], so the
// first weight is 64 * 2/127 = 1 + 1/127; channel 1 w = [0.5, 0.25], s_w = 0.5/127, codes
// [127, 64], the second 0.25 + 0.25/127. With input means [2, 4] the int8 weights add 2/127 and
// 1/127 on average: biases 0.5 - 2/127 and -1 - 1/127 at s_x * s_w = 2/127^2 and 0.5/127^2 are
// 3905.25 -> 3905 and -32512 (4032 and -32258 uncorrected). The gemm holds the same weights as
// K x N columns; the matmul has no bias, so its own is the correction alone: -127 and -254.
// RUN: xnpu-opt %s -p lower-nn-to-fixed | filecheck %s

func.func @main(%x: tensor<1x2x1x1xf32> {nn.name = "x", nn.scale = 0.007874015718698502 : f32}, %v: tensor<1x2xf32> {nn.name = "v", nn.scale = 0.007874015718698502 : f32}) -> (tensor<1x2x1x1xf32> {nn.name = "y"}, tensor<1x2xf32> {nn.name = "g"}, tensor<1x2xf32> {nn.name = "m"}) {
  %w = nn.constant dense<[[[[1.0]], [[-2.0]]], [[[0.5]], [[0.25]]]]> : tensor<2x2x1x1xf32>
  %b = nn.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %c = nn.conv2d %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, nn.scale = 0.1 : f32, nn.input_mean = array<f32: 2.0, 4.0>} : (tensor<1x2x1x1xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x1x1xf32> loc("conv")
  %k = nn.constant dense<[[1.0, 0.5], [-2.0, 0.25]]> : tensor<2x2xf32>
  %g = nn.gemm %v, %k, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 0 : i64, nn.scale = 0.1 : f32, nn.input_mean = array<f32: 2.0, 4.0>} : (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<1x2xf32> loc("gemm")
  %m = nn.matmul %v, %k {nn.scale = 0.1 : f32, nn.input_mean = array<f32: 2.0, 4.0>} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32> loc("matmul")
  func.return %c, %g, %m : tensor<1x2x1x1xf32>, tensor<1x2xf32>, tensor<1x2xf32>
}

// CHECK:      fixed.constant dense<{{\[\[\[\[}}64]], {{\[\[}}-127]]], {{\[\[\[}}127]], {{\[\[}}64]]]]> : tensor<2x2x1x1xi8>
// CHECK-NEXT: fixed.constant dense<[3905, -32512]> : tensor<2xi32>
// CHECK-NEXT: fixed.conv2d {{.*}} loc("conv")
// CHECK:      fixed.constant dense<{{\[\[}}64, 127], [-127, 64]]> : tensor<2x2xi8>
// CHECK-NEXT: fixed.constant dense<[3905, -32512]> : tensor<2xi32>
// CHECK-NEXT: fixed.gemm {{.*}} loc("gemm")
// CHECK:      fixed.constant dense<{{\[\[}}64, 127], [-127, 64]]> : tensor<2x2xi8>
// CHECK-NEXT: fixed.constant dense<[-127, -254]> : tensor<2xi32>
// CHECK-NEXT: fixed.gemm {{.*}} loc("matmul")
