// RUN: xnpu-opt %s --split-input-file -p fuse-activations | filecheck %s

// (3 + x) clipped to [0, 6], times x, divided by 6: the whole spelling is one hard_swish at the
// location of the op it replaces.

func.func @relu6_spelling(%x: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %three = nn.constant dense<3.0> : tensor<f32>
  %six = nn.constant dense<6.0> : tensor<1xf32>
  %shifted = nn.add %three, %x : (tensor<f32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %relu6 = nn.clip %shifted {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x4x3x3xf32> -> tensor<1x4x3x3xf32>
  %product = nn.mul %relu6, %x : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %y = nn.div %product, %six : (tensor<1x4x3x3xf32>, tensor<1xf32>) -> tensor<1x4x3x3xf32> loc("div_128")
  func.return %y : tensor<1x4x3x3xf32>
}

// CHECK-LABEL: func.func @relu6_spelling(%x: tensor<1x4x3x3xf32>)
// CHECK-NEXT:    %y = nn.hard_swish %x : tensor<1x4x3x3xf32> -> tensor<1x4x3x3xf32> loc("div_128")
// CHECK-NEXT:    func.return %y

// -----

// x * (relu6(x + 3) * (1/6)): the gate is a hard_sigmoid (alpha 1/6, beta 1/2), then x times it
// a hard_swish.

func.func @gate_first(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>) {
  %three = nn.constant dense<3.0> : tensor<f32>
  %sixth = nn.constant dense<0.166666672> : tensor<f32>
  %shifted = nn.add %x, %three : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %relu6 = nn.clip %shifted {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x8xf32> -> tensor<2x8xf32>
  %gate = nn.mul %sixth, %relu6 : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = nn.mul %x, %gate : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @gate_first(%x: tensor<2x8xf32>)
// CHECK-NEXT:    %y = nn.hard_swish %x : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// hard_sigmoid(x) * x with alpha 1/6 is hard_swish; with alpha 0.2 (a squeeze-excitation gate)
// it is not.

func.func @hard_sigmoid_spelling(%x: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>) {
  %gate = nn.hard_sigmoid %x {alpha = 0.166666672 : f32, beta = 0.5 : f32} : tensor<1x4xf32> -> tensor<1x4xf32>
  %y = nn.mul %gate, %x : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %se_gate = nn.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<1x4xf32> -> tensor<1x4xf32>
  %z = nn.mul %x, %se_gate : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %y, %z : tensor<1x4xf32>, tensor<1x4xf32>
}

// CHECK-LABEL: func.func @hard_sigmoid_spelling(%x: tensor<1x4xf32>)
// CHECK-NEXT:    %y = nn.hard_swish %x : tensor<1x4xf32> -> tensor<1x4xf32>
// CHECK-NEXT:    %se_gate = nn.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32}
// CHECK-NEXT:    %z = nn.mul %x, %se_gate
// CHECK-NEXT:    func.return %y, %z

// -----

// A near miss: clip to [0, 5] is not relu6, so nothing changes.

func.func @near_miss(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %three = nn.constant dense<3.0> : tensor<f32>
  %six = nn.constant dense<6.0> : tensor<f32>
  %shifted = nn.add %three, %x : (tensor<f32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %clipped = nn.clip %shifted {min = 0.0 : f32, max = 5.0 : f32} : tensor<1x4xf32> -> tensor<1x4xf32>
  %product = nn.mul %x, %clipped : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %y = nn.div %product, %six : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// CHECK-LABEL: func.func @near_miss(%x: tensor<1x4xf32>)
// CHECK:         %shifted = nn.add %three, %x : (tensor<f32>, tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %clipped = nn.clip %shifted {min = 0.000000e+00 : f32, max = 5.000000e+00 : f32}
// CHECK-NEXT:    %product = nn.mul %x, %clipped
// CHECK-NEXT:    %y = nn.div %product, %six
// CHECK-NOT:     nn.hard_
