// RUN: xnpu-opt %s -p 'calibrate{data="%S/Inputs/calibrate_tiny.npy" method=minmax}' | filecheck %s
// RUN: xnpu-opt %s -p 'calibrate{data="%S/Inputs/calibrate_tiny.npy" method=minmax per_channel=false}' | filecheck %s --check-prefix=TENSOR
// RUN: xnpu-opt %s -p 'calibrate{data="%S/Inputs/calibrate_tiny.npy" method=minmax bias_correction=true}' | filecheck %s --check-prefix=MEAN
// RUN: not xnpu-opt %s -p 'calibrate{data="%S/Inputs/missing.npy"}' 2>&1 | filecheck %s --check-prefix=MISSING

// Inputs/calibrate_tiny.npy holds 3 samples of x:
//   [1, -12.7, 3, 0.5], [2.54, 0, -1, 6.35], [-0.5, 1.27, 0, 0]
// so max|x| = 12.7, max relu(x) = 6.35, gemm rows [4, 1], [2.54, 12.7], [0, 1.27]: max 12.7,
// and x * 0 is zero everywhere, which gets the default scale 1/127. With bias_correction the
// gemm's input mean (what each weight row multiplies on average) is relu(x)'s column means.

func.func @main(%x: tensor<1x4xf32> {nn.name = "x"}) -> (tensor<1x2xf32> {nn.name = "y"}, tensor<1x4xf32> {nn.name = "z"}) {
  %w = nn.constant dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 2.0]]> : tensor<4x2xf32>
  %zero = nn.constant dense<0.0> : tensor<1x4xf32>
  %r = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu")
  %y = nn.gemm %r, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32> loc("gemm")
  %z = nn.mul %x, %zero : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("zeroed")
  func.return %y, %z : tensor<1x2xf32>, tensor<1x4xf32>
}

// CHECK:      builtin.module attributes {nn.calibration = "minmax"}
// CHECK-NEXT:   func.func @main(%x: tensor<1x4xf32> {nn.name = "x", nn.scale = 1.000000e-01 : f32})
// CHECK:          %w = nn.constant dense<{{.*}}> : tensor<4x2xf32>{{$}}
// CHECK:          %r = nn.relu %x {nn.scale = 5.000000e-02 : f32}
// CHECK-NEXT:     %y = nn.gemm %r, %w {nn.scale = 1.000000e-01 : f32, nn.weight_scales = array<f32: 0.00787401572, 0.0157480314>, alpha
// CHECK-NEXT:     %z = nn.mul %x, %zero {nn.scale = 0.00787401572 : f32}

// MEAN:       nn.gemm %r, %w {nn.scale = 1.000000e-01 : f32, nn.weight_scales = array<f32: 0.00787401572, 0.0157480314>, nn.input_mean = array<f32: 1.180000e+00, 0.423333317, 1.000000e+00, 2.2833333>, alpha

// TENSOR:     nn.gemm %r, %w {nn.scale = 1.000000e-01 : f32, nn.weight_scales = array<f32: 0.0157480314>,

// MISSING:    error: {{.*}}missing.npy: calibration data file not found
