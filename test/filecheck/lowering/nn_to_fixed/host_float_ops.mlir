// RUN: xnpu-opt %s -p 'lower-nn-to-fixed,fold-quantize-pairs' | filecheck %s

// An op with no integer lowering stays a float op for the host: it reads the float its int8
// input's island ends with (relu1's dequantize), the island that reads its result on quantizes
// it at the result's calibrated scale (relu2), and the program returns the float result as it
// is (no int8 step: the probabilities keep full precision). fold-quantize-pairs folds nothing
// across it.

func.func @main(%x: tensor<1x4xf32> {nn.name = "x", nn.scale = 0.05 : f32}) -> (tensor<1x4xf32> {nn.name = "p"}, tensor<1x4xf32> {nn.name = "r"}) {
  %a = nn.relu %x {nn.scale = 0.05 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu1")
  %p = nn.softmax %a {axis = 1 : i64, nn.scale = 0.0078125 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("prob")
  %r = nn.relu %p {nn.scale = 0.0078125 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu2")
  func.return %p, %r : tensor<1x4xf32>, tensor<1x4xf32>
}
// CHECK:      %[[Q:.*]] = fixed.quantize %x {scale = 0.05000000074505806 : f64} : tensor<1x4xf32> -> tensor<1x4xi8> loc("relu1")
// CHECK-NEXT: %[[A:.*]] = fixed.clamp %[[Q]] {{.*}} loc("relu1")
// CHECK-NEXT: %[[F:.*]] = fixed.dequantize %[[A]] {scale = 0.05000000074505806 : f64} : tensor<1x4xi8> -> tensor<1x4xf32> loc("relu1")
// CHECK-NEXT: %[[P:.*]] = nn.softmax %[[F]] {{.*}} : tensor<1x4xf32> -> tensor<1x4xf32> loc("prob")
// CHECK-NEXT: %[[I:.*]] = fixed.quantize %[[P]] {scale = 7.812500e-03 : f64} : tensor<1x4xf32> -> tensor<1x4xi8> loc("relu2")
// CHECK-NEXT: %[[R:.*]] = fixed.clamp %[[I]] {{.*}} loc("relu2")
// CHECK-NEXT: %[[Y:.*]] = fixed.dequantize %[[R]] {{.*}} loc("relu2")
// CHECK-NEXT: func.return %[[P]], %[[Y]] : tensor<1x4xf32>, tensor<1x4xf32>
