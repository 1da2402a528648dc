// RUN: xnpu-opt %s --split-input-file -p expand-layer-norm | filecheck %s

// A LayerNorm over the last axis with constant scale and bias: the mean a matmul by J/C, the
// variance a mean of squares, 1/sqrt(v + epsilon) a pointwise op, the scale a matmul of one
// row spreading each token's value along the channels, at the LayerNorm's location.

func.func @tokens(%x: tensor<1x3x4xf32>) -> tensor<1x3x4xf32> {
  %scale = nn.constant dense<[1.0, 2.0, 0.5, -1.0]> : tensor<4xf32>
  %bias = nn.constant dense<[0.0, 0.1, 0.2, 0.3]> : tensor<4xf32>
  %y = nn.layer_norm %x, %scale, %bias {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x3x4xf32> loc("ln")
  func.return %y : tensor<1x3x4xf32>
}

// CHECK-LABEL: func.func @tokens
// CHECK-DAG:   %[[BIAS:.*]] = nn.constant dense<[0.000000e+00, 1.000000e-01, 2.000000e-01, 3.000000e-01]> : tensor<4xf32>
// CHECK-DAG:   %[[MEANS:.*]] = nn.constant dense<2.500000e-01> : tensor<4x4xf32>
// CHECK-DAG:   %[[ROW:.*]] = nn.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 5.000000e-01, -1.000000e+00]]> : tensor<1x4xf32>
// CHECK:       %[[M:.*]] = nn.matmul %x, %[[MEANS]] : (tensor<1x3x4xf32>, tensor<4x4xf32>) -> tensor<1x3x4xf32> loc("ln")
// CHECK-NEXT:  %[[D:.*]] = nn.sub %x, %[[M]] : {{.*}} loc("ln")
// CHECK-NEXT:  %[[V:.*]] = nn.mean_square %[[D]] : tensor<1x3x4xf32> -> tensor<1x3x1xf32> loc("ln")
// CHECK-NEXT:  %[[R:.*]] = nn.reciprocal_sqrt %[[V]] {epsilon = 1.000000e-05 : f32} : tensor<1x3x1xf32> -> tensor<1x3x1xf32> loc("ln")
// CHECK-NEXT:  %[[S:.*]] = nn.matmul %[[R]], %[[ROW]] : (tensor<1x3x1xf32>, tensor<1x4xf32>) -> tensor<1x3x4xf32> loc("ln")
// CHECK-NEXT:  %[[N:.*]] = nn.mul %[[D]], %[[S]] : {{.*}} loc("ln")
// CHECK-NEXT:  %[[Y:.*]] = nn.add %[[N]], %[[BIAS]] : {{.*}} loc("ln")
// CHECK-NEXT:  func.return %[[Y]]

// -----

// A scale computed by the model (an input) is no constant: the LayerNorm stays one op.

func.func @scale_input(%x: tensor<1x3x4xf32>, %scale: tensor<4xf32>) -> tensor<1x3x4xf32> {
  %bias = nn.constant dense<0.0> : tensor<4xf32>
  %y = nn.layer_norm %x, %scale, %bias {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x3x4xf32>
  func.return %y : tensor<1x3x4xf32>
}

// CHECK-LABEL: func.func @scale_input
// CHECK:       nn.layer_norm
// CHECK-NOT:   nn.mean_square

// -----

// Over the last two axes: no mean of one axis, the LayerNorm stays one op.

func.func @two_axes(%x: tensor<1x3x4xf32>) -> tensor<1x3x4xf32> {
  %scale = nn.constant dense<1.0> : tensor<3x4xf32>
  %bias = nn.constant dense<0.0> : tensor<3x4xf32>
  %y = nn.layer_norm %x, %scale, %bias {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x3x4xf32>
  func.return %y : tensor<1x3x4xf32>
}

// CHECK-LABEL: func.func @two_axes
// CHECK:       nn.layer_norm
// CHECK-NOT:   nn.mean_square
