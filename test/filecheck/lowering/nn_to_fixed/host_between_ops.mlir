// RUN: xnpu-opt %s -p 'lower-nn-to-fixed,fold-quantize-pairs' | filecheck %s

// An element-wise or data-movement op whose float operands host ops compute and whose result
// only host ops or the program's return read computes in float beside them (nn.float_reason):
// no int8 tensor that only the host uses. silero_vad's STFT magnitude sqrt(re^2 + im^2) is
// Pow, Pow, Add, Sqrt (the add stays float), and its magnitude leaves through a reshape (float
// too). An add that reads a program input as well stays integer: its island quantizes the
// host op's result at the scale calibration gave that result.

func.func @main(%re: tensor<1x4xf32> {nn.name = "re"}, %im: tensor<1x4xf32> {nn.name = "im"}, %z: tensor<1x4xf32> {nn.name = "z", nn.scale = 0.05 : f32}) -> (tensor<4xf32> {nn.name = "flat"}, tensor<1x4xf32> {nn.name = "y"}) {
  %a = nn.onnx "Pow" (%re) {model = #nn.onnx_model<"CAg=">, reason = "ONNX op 'Pow' has no nn equivalent", nn.result_scales = array<f32: 0.5>} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("re2")
  %b = nn.onnx "Pow" (%im) {model = #nn.onnx_model<"CAg=">, reason = "ONNX op 'Pow' has no nn equivalent", nn.result_scales = array<f32: 0.5>} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("im2")
  %s = nn.add %a, %b {nn.scale = 0.5 : f32} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("power")
  %m = nn.onnx "Sqrt" (%s) {model = #nn.onnx_model<"CAg=">, reason = "ONNX op 'Sqrt' has no nn equivalent", nn.result_scales = array<f32: 0.0625>} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("magnitude")
  %f = nn.reshape %m {nn.scale = 0.0625 : f32} : tensor<1x4xf32> -> tensor<4xf32> loc("flat")
  %y = nn.add %m, %z {nn.scale = 0.125 : f32} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("plus_z")
  func.return %f, %y : tensor<4xf32>, tensor<1x4xf32>
}
// CHECK:      %[[A:.*]] = nn.onnx "Pow"(%re) {{.*}} loc("re2")
// CHECK-NEXT: %[[B:.*]] = nn.onnx "Pow"(%im) {{.*}} loc("im2")
// CHECK-NEXT: %[[S:.*]] = nn.add %[[A]], %[[B]] {{{.*}}nn.float_reason = "host ops compute its operands and only host ops or the outputs read it: it computes in float"} {{.*}} loc("power")
// CHECK-NEXT: %[[M:.*]] = nn.onnx "Sqrt"(%[[S]]) {{.*}} loc("magnitude")
// CHECK-NEXT: %[[F:.*]] = nn.reshape %[[M]] {{{.*}}nn.float_reason = {{.*}} : tensor<1x4xf32> -> tensor<4xf32> loc("flat")
// CHECK-NEXT: %[[QM:.*]] = fixed.quantize %[[M]] {scale = 6.250000e-02 : f64} : tensor<1x4xf32> -> tensor<1x4xi8> loc("plus_z")
// CHECK-NEXT: %[[QZ:.*]] = fixed.quantize %z {{.*}} loc("plus_z")
// CHECK-NEXT: fixed.add %[[QM]], %[[QZ]] {{.*}} loc("plus_z")
// CHECK:      %[[Y:.*]] = fixed.dequantize {{.*}} loc("plus_z")
// CHECK-NEXT: func.return %[[F]], %[[Y]] : tensor<4xf32>, tensor<1x4xf32>
