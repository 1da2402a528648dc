// RUN: xnpu-opt %s -p 'calibrate{data="%S/Inputs/calibrate_consumers.npz"}' | filecheck %s
// RUN: xnpu-opt %s -p 'calibrate{data="%S/Inputs/calibrate_consumers.npz" method=minmax}' | filecheck %s --check-prefix=MINMAX
// RUN: xnpu-opt %s -p 'calibrate{data="%S/Inputs/calibrate_consumers.npz" method=minmax consumer_ranges=true}' | filecheck %s --check-prefix=RANGES

// Inputs/calibrate_consumers.npz: 64 samples of a (1x2, uniform in [-1, 1] but for
// a[5][0] = -50 and a[9][1] = 2.5) and b (1x256, standard normal, max|b| = 4.023).
// %a feeds only hard_swish, which is 0 for every value <= -3: with consumer ranges -50 counts
// as -3, so max|a| is 3 (3 / 127 = 0.0236220472) instead of 50 (0.393700778). %b feeds a
// sigmoid, which has no such bound. mse (the default) clips b's sparse tail: its threshold,
// 3.866 (127 * 0.030440975), is below max|b|; on a it keeps the range (the data fill it).

func.func @main(%a: tensor<1x2xf32> {nn.name = "a"}, %b: tensor<1x256xf32> {nn.name = "b"}) -> (tensor<1x2xf32>, tensor<1x256xf32>) {
  %h = nn.hard_swish %a : tensor<1x2xf32> -> tensor<1x2xf32> loc("h")
  %s = nn.sigmoid %b : tensor<1x256xf32> -> tensor<1x256xf32> loc("s")
  func.return %h, %s : tensor<1x2xf32>, tensor<1x256xf32>
}

// CHECK:      builtin.module attributes {nn.calibration = "mse"}
// CHECK-NEXT:   func.func @main(%a: tensor<1x2xf32> {nn.name = "a", nn.scale = 0.0235989783 : f32}, %b: tensor<1x256xf32> {nn.name = "b", nn.scale = 0.030440975 : f32})

// MINMAX:      builtin.module attributes {nn.calibration = "minmax"}
// MINMAX-NEXT:   func.func @main(%a: tensor<1x2xf32> {nn.name = "a", nn.scale = 0.393700778 : f32}, %b: tensor<1x256xf32> {nn.name = "b", nn.scale = 0.0316784121 : f32})

// RANGES:      builtin.module attributes {nn.calibration = "minmax"}
// RANGES-NEXT:   func.func @main(%a: tensor<1x2xf32> {nn.name = "a", nn.scale = 0.0236220472 : f32}, %b: tensor<1x256xf32> {nn.name = "b", nn.scale = 0.0316784121 : f32})
