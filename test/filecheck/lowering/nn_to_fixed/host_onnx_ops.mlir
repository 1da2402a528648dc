// RUN: xnpu-opt %s -p 'lower-nn-to-fixed,fold-quantize-pairs' | filecheck %s

// ONNX nodes the front end keeps for onnxruntime (nn.onnx) stay float ops for the host, and
// nothing the accelerator never sees is rounded to int8: a float program input only host ops
// read enters as it is, a float tensor between two host ops stays float, and a value that is
// not float (an int64 count) passes untouched. The relu, between a host op and the program's
// return, computes in float too (host_between_ops.mlir has an island reading a host op).

func.func @main(%x: tensor<1x4xf32> {nn.name = "x", nn.scale = 0.05 : f32}, %n: tensor<si64> {nn.name = "n"}) -> (tensor<1x4xf32> {nn.name = "y"}, tensor<si64> {nn.name = "m"}) {
  %e = nn.onnx "Erf" (%x) {model = #nn.onnx_model<"CAg=">, reason = "ONNX op 'Erf' has no nn equivalent", nn.result_scales = array<f32: 0.0078125>} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("erf")
  %s = nn.onnx "Sqrt" (%e) {model = #nn.onnx_model<"CAg=">, reason = "ONNX op 'Sqrt' has no nn equivalent", nn.result_scales = array<f32: 0.0078125>} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("sqrt")
  %r = nn.relu %s {nn.scale = 0.0078125 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu")
  %m = nn.onnx "Mul" (%n) {model = #nn.onnx_model<"CAg=">, reason = "ONNX Mul: its operands are int64", nn.result_scales = array<f32: 0.0>} : (tensor<si64>) -> tensor<si64> loc("mul")
  func.return %r, %m : tensor<1x4xf32>, tensor<si64>
}
// CHECK:      %[[E:.*]] = nn.onnx "Erf"(%x) {{.*}} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("erf")
// CHECK-NEXT: %[[S:.*]] = nn.onnx "Sqrt"(%[[E]]) {{.*}} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("sqrt")
// CHECK-NEXT: %[[Y:.*]] = nn.relu %[[S]] {{{.*}}nn.float_reason = {{.*}} loc("relu")
// CHECK-NEXT: %[[M:.*]] = nn.onnx "Mul"(%n) {{.*}} : (tensor<si64>) -> tensor<si64> loc("mul")
// CHECK-NEXT: func.return %[[Y]], %[[M]] : tensor<1x4xf32>, tensor<si64>
