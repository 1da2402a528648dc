// RUN: xnpu-opt %s -p constant-fold | filecheck %s

// A weight computed from constants (transpose(relu(a) * 2)) becomes one constant holding
// the computed values, at the location of the last op folded.

func.func @fold_chain(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %a = nn.constant dense<[[1.0, -2.0], [3.0, 4.0], [-5.0, 6.0]]> : tensor<3x2xf32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %r = nn.relu %a : tensor<3x2xf32> -> tensor<3x2xf32>
  %s = nn.mul %r, %two : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  %t = nn.transpose %s {perm = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32> loc("weight_t")
  %y = nn.gemm %x, %t {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @fold_chain(%x: tensor<2x3xf32>)
// CHECK-NEXT:    %t = nn.constant dense<{{\[}}[2.000000e+00, 6.000000e+00, 0.000000e+00], [0.000000e+00, 8.000000e+00, 1.200000e+01]]> : tensor<2x3xf32> loc("weight_t")
// CHECK-NEXT:    %y = nn.gemm %x, %t
// CHECK-NOT:     nn.relu
// CHECK-NOT:     nn.mul

// Any nn op folds: here a broadcast add and a global pool on constants, down to the
// function's result.

func.func @fold_to_result() -> tensor<1x2x1x1xf32> {
  %x = nn.constant dense<[[[[1.0, 3.0]], [[0.0, 2.0]]]]> : tensor<1x2x1x2xf32>
  %b = nn.constant dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>
  %a = nn.add %x, %b : (tensor<1x2x1x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x1x2xf32>
  %g = nn.global_average_pool %a : tensor<1x2x1x2xf32> -> tensor<1x2x1x1xf32>
  func.return %g : tensor<1x2x1x1xf32>
}

// CHECK-LABEL: func.func @fold_to_result()
// CHECK-NEXT:    %g = nn.constant dense<{{\[\[\[\[}}3.000000e+00]], {{\[\[}}0.000000e+00]]]]> : tensor<1x2x1x1xf32>
// CHECK-NEXT:    func.return %g

// An op with a non-constant operand stays.

func.func @partly_constant(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = nn.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// CHECK-LABEL: func.func @partly_constant
// CHECK-NEXT:    %c = nn.constant dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NEXT:    %y = nn.add %x, %c
