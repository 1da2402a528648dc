// RUN: xnpu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// nn.onnx names its ONNX op, has a result, and holds its model as base64 text.

func.func @no_op_type(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %y = nn.onnx "" (%x) {model = #nn.onnx_model<"CAg=">, reason = ""} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// CHECK: nn.onnx: op_type must name the ONNX op

// -----

func.func @no_result(%x: tensor<1x4xf32>) {
  nn.onnx "Erf" (%x) {model = #nn.onnx_model<"CAg=">, reason = ""} : (tensor<1x4xf32>) -> ()
  func.return
}

// CHECK: nn.onnx: needs at least one result
