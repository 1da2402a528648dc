// RUN: xnpu-opt %s -p 'constant-fold{max-elements=3}' | filecheck %s

// With max-elements=3 a 2x2 result is not materialized; the 3-element one is.

func.func @limit() -> (tensor<2x2xf32>, tensor<3xf32>) {
  %s = nn.constant dense<-1.0> : tensor<f32>
  %v = nn.constant dense<[1.0, -2.0, 3.0]> : tensor<3xf32>
  %big = nn.constant dense<[[1.0, -2.0], [3.0, -4.0]]> : tensor<2x2xf32>
  %small = nn.mul %v, %s : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %kept = nn.relu %big : tensor<2x2xf32> -> tensor<2x2xf32>
  func.return %kept, %small : tensor<2x2xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @limit()
// CHECK-DAG:     %small = nn.constant dense<[-1.000000e+00, 2.000000e+00, -3.000000e+00]> : tensor<3xf32>
// CHECK-DAG:     %kept = nn.relu %big : tensor<2x2xf32> -> tensor<2x2xf32>
