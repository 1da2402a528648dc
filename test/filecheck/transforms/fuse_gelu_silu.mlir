// RUN: xnpu-opt %s --split-input-file -p fuse-activations | filecheck %s

// PyTorch's GELU before opset 20: x / sqrt(2), erf (an ONNX node kept for onnxruntime), + 1,
// times x, times 0.5 is one nn.gelu at the location of the op it replaces; the Erf node goes.

func.func @gelu_div(%x: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %root2 = nn.constant dense<1.41421354> : tensor<1xf32>
  %one = nn.constant dense<1.0> : tensor<1xf32>
  %half = nn.constant dense<0.5> : tensor<1xf32>
  %scaled = nn.div %x, %root2 : (tensor<1x4x3x3xf32>, tensor<1xf32>) -> tensor<1x4x3x3xf32>
  %erf = nn.onnx "Erf"(%scaled) {model = #nn.onnx_model<"CA46UQoQCgF4EgF5GgNlcmYiA0VyZhIDZXJmWhsKAXgSFgoUCAESEAoCCAEKAggECgIIAwoCCANiGwoBeRIWChQIARIQCgIIAQoCCAQKAggDCgIIA0IECgAQEQ==">, reason = "ONNX op 'Erf' has no nn equivalent"} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %gate = nn.add %erf, %one : (tensor<1x4x3x3xf32>, tensor<1xf32>) -> tensor<1x4x3x3xf32>
  %product = nn.mul %x, %gate : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %y = nn.mul %product, %half : (tensor<1x4x3x3xf32>, tensor<1xf32>) -> tensor<1x4x3x3xf32> loc("Mul_12")
  func.return %y : tensor<1x4x3x3xf32>
}

// CHECK-LABEL: func.func @gelu_div(%x: tensor<1x4x3x3xf32>)
// CHECK-NEXT:    %y = nn.gelu %x : tensor<1x4x3x3xf32> -> tensor<1x4x3x3xf32> loc("Mul_12")
// CHECK-NEXT:    func.return %y

// -----

// x * (1/sqrt(2)) with the half taken first and the operands the other way round.

func.func @gelu_half_first(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %inverse_root2 = nn.constant dense<0.707106769> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %scaled2 = nn.mul %inverse_root2, %x : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %erf = nn.onnx "Erf"(%scaled2) {model = #nn.onnx_model<"CA46QQoQCgF4EgF5GgNlcmYiA0VyZhIDZXJmWhMKAXgSDgoMCAESCAoCCAIKAggIYhMKAXkSDgoMCAESCAoCCAIKAggIQgQKABAR">, reason = "ONNX op 'Erf' has no nn equivalent"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gate = nn.add %one, %erf : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %product = nn.mul %gate, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = nn.mul %half, %product : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @gelu_half_first(%x: tensor<2x8xf32>)
// CHECK-NEXT:    %y = nn.gelu %x : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// A GELU whose input is divided by 2 instead of sqrt(2) is not one: nothing changes.

func.func @not_gelu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %scaled = nn.div %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %erf = nn.onnx "Erf"(%scaled) {model = #nn.onnx_model<"CA46QQoQCgF4EgF5GgNlcmYiA0VyZhIDZXJmWhMKAXgSDgoMCAESCAoCCAIKAggIYhMKAXkSDgoMCAESCAoCCAIKAggIQgQKABAR">, reason = "ONNX op 'Erf' has no nn equivalent"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gate = nn.add %erf, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %product = nn.mul %x, %gate : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = nn.mul %product, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @not_gelu
// CHECK:         nn.onnx "Erf"
// CHECK-NOT:     nn.gelu

// -----

// x * sigmoid(x) in either order is one nn.silu; a sigmoid of another tensor is a gate, left alone.

func.func @silu(%x: tensor<1x8x1x40xf32>, %g: tensor<1x8x1x40xf32>) -> (tensor<1x8x1x40xf32>, tensor<1x8x1x40xf32>) {
  %s = nn.sigmoid %x : tensor<1x8x1x40xf32> -> tensor<1x8x1x40xf32>
  %y = nn.mul %s, %x : (tensor<1x8x1x40xf32>, tensor<1x8x1x40xf32>) -> tensor<1x8x1x40xf32>
  %sg = nn.sigmoid %g : tensor<1x8x1x40xf32> -> tensor<1x8x1x40xf32>
  %z = nn.mul %x, %sg : (tensor<1x8x1x40xf32>, tensor<1x8x1x40xf32>) -> tensor<1x8x1x40xf32>
  func.return %y, %z : tensor<1x8x1x40xf32>, tensor<1x8x1x40xf32>
}

// CHECK-LABEL: func.func @silu
// CHECK-NEXT:    %y = nn.silu %x : tensor<1x8x1x40xf32> -> tensor<1x8x1x40xf32>
// CHECK-NEXT:    %sg = nn.sigmoid %g
// CHECK-NEXT:    %z = nn.mul %x, %sg
// CHECK-NEXT:    func.return %y, %z
