// RUN: xnpu-opt %s -p split-channel-groups | filecheck %s

// conv -> hard_swish -> depthwise conv -> relu -> conv, its 3 channels in groups [1, 0, 1]:
// group 0 holds channel 1, group 1 channels 0 and 2. Each group gets the producer's and the
// depthwise kernels' rows of its channels; the consumer reads the concatenation [1, 0, 2], so
// its weight columns are permuted to that order.

func.func @splits(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %wp = nn.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>
  %bp = nn.constant dense<[0.5, 0.25, -1.0]> : tensor<3xf32>
  %p = nn.conv2d %x, %wp, %bp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32> loc("pw")
  %a = nn.hard_swish %p : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32> loc("hs")
  %wd = nn.constant dense<[[[[7.0]]], [[[8.0]]], [[[9.0]]]]> : tensor<3x1x1x1xf32>
  %d = nn.conv2d %a, %wd {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64, xnpu.channel_groups = array<i64: 1, 0, 1>} : (tensor<1x3x4x4xf32>, tensor<3x1x1x1xf32>) -> tensor<1x3x4x4xf32> loc("dw")
  %r = nn.relu %d : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32> loc("relu")
  %wc = nn.constant dense<[[[[1.0]], [[2.0]], [[3.0]]], [[[4.0]], [[5.0]], [[6.0]]]]> : tensor<2x3x1x1xf32>
  %y = nn.conv2d %r, %wc {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32> loc("consumer")
  func.return %y : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @splits
// CHECK:         %[[W0:.*]] = nn.constant dense<{{\[\[\[\[}}3.000000e+00]], {{\[\[}}4.000000e+00]]]]> : tensor<1x2x1x1xf32>
// CHECK-NEXT:    %[[B0:.*]] = nn.constant dense<2.500000e-01> : tensor<1xf32>
// CHECK-NEXT:    %[[P0:.*]] = nn.conv2d %x, %[[W0]], %[[B0]] {xnpu.onnx_channels = array<i64: 1>, {{.*}}group = 1 : i64} : {{.*}} -> tensor<1x1x4x4xf32> loc("pw")
// CHECK-NEXT:    %[[A0:.*]] = nn.hard_swish %[[P0]] {xnpu.onnx_channels = array<i64: 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32> loc("hs")
// CHECK-NEXT:    %[[K0:.*]] = nn.constant dense<8.000000e+00> : tensor<1x1x1x1xf32>
// CHECK-NEXT:    %[[D0:.*]] = nn.conv2d %[[A0]], %[[K0]] {xnpu.onnx_channels = array<i64: 1>, {{.*}}group = 1 : i64} : {{.*}} -> tensor<1x1x4x4xf32> loc("dw")
// CHECK-NEXT:    %[[R0:.*]] = nn.relu %[[D0]] {xnpu.onnx_channels = array<i64: 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32> loc("relu")
// CHECK-NEXT:    %[[W1:.*]] = nn.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}5.000000e+00]], {{\[\[}}6.000000e+00]]]]> : tensor<2x2x1x1xf32>
// CHECK-NEXT:    %[[B1:.*]] = nn.constant dense<[5.000000e-01, -1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[P1:.*]] = nn.conv2d %x, %[[W1]], %[[B1]] {xnpu.onnx_channels = array<i64: 0, 2>, {{.*}}group = 1 : i64} : {{.*}} -> tensor<1x2x4x4xf32> loc("pw")
// CHECK-NEXT:    %[[A1:.*]] = nn.hard_swish %[[P1]] {xnpu.onnx_channels = array<i64: 0, 2>}
// CHECK-NEXT:    %[[K1:.*]] = nn.constant dense<{{\[\[\[\[}}7.000000e+00]]], {{\[\[\[}}9.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[D1:.*]] = nn.conv2d %[[A1]], %[[K1]] {xnpu.onnx_channels = array<i64: 0, 2>, {{.*}}group = 2 : i64} : {{.*}} -> tensor<1x2x4x4xf32> loc("dw")
// CHECK-NEXT:    %[[R1:.*]] = nn.relu %[[D1]] {xnpu.onnx_channels = array<i64: 0, 2>}
// CHECK-NEXT:    %[[C:.*]] = nn.concat %[[R0]], %[[R1]] {xnpu.onnx_channels = array<i64: 1, 0, 2>, axis = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x3x4x4xf32> loc("relu")
// CHECK-NEXT:    %[[WC:.*]] = nn.constant dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}1.000000e+00]], {{\[\[}}3.000000e+00]]], {{\[\[\[}}5.000000e+00]], {{\[\[}}4.000000e+00]], {{\[\[}}6.000000e+00]]]]> : tensor<2x3x1x1xf32>
// CHECK-NEXT:    %y = nn.conv2d %[[C]], %[[WC]] {{.*}} -> tensor<1x2x4x4xf32> loc("consumer")
// CHECK-NEXT:    func.return %y
// CHECK-NOT:     xnpu.channel_groups
