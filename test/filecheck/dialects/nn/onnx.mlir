// RUN: %roundtrip

// nn.onnx: an ONNX node the front end does not model, holding it as a small ONNX model (base64)
// that onnxruntime runs. Results may be of any element type ONNX has (TopK's indices are si64),
// and the op keeps why it was left opaque. Both the custom and the generic form parse.

func.func @top2(%x: tensor<1x4xf32>) -> (tensor<1x2xf32>, tensor<1x2xsi64>) {
  %v, %i = nn.onnx "TopK" (%x) {model = #nn.onnx_model<"CAg6cgoYCgF4CgFrEgF2EgFpGgR0b3AyIgRUb3BLEgR0b3AyKhEIARAHQgFrSggCAAAAAAAAAFoTCgF4Eg4KDAgBEggKAggBCgIIBGITCgF2Eg4KDAgBEggKAggBCgIIAmITCgFpEg4KDAgHEggKAggBCgIIAkIECgAQDQ==">, reason = "ONNX op 'TopK' has no nn equivalent"} : (tensor<1x4xf32>) -> (tensor<1x2xf32>, tensor<1x2xsi64>) loc("top2")
  func.return %v, %i : tensor<1x2xf32>, tensor<1x2xsi64>
}

// CHECK:      %v, %i = nn.onnx "TopK"(%x) {model = #nn.onnx_model<"CAg6cgoYCgF4CgFrEgF2EgFp{{.*}}">, reason = "ONNX op 'TopK' has no nn equivalent"} : (tensor<1x4xf32>) -> (tensor<1x2xf32>, tensor<1x2xsi64>)
// CHECK-NEXT: func.return %v, %i : tensor<1x2xf32>, tensor<1x2xsi64>
