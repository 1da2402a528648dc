// clamp.mlir's one @clamp pattern lowers relu, relu6 (clip 0..6), hard_tanh (clip -1..1) and a
// clip with an open bound to a clamp of the codes at the output scale (R8). refine_scales gave
// each clip its input's scale 0.05: relu6 is [0, 6 / 0.05] = [0, 120], hard_tanh [-20, 20],
// min -0.33 is round(-6.6) = -7, an open bound is the int8 limit.
// RUN: xnpu-opt %s -p lower-nn-to-fixed | filecheck %s

func.func @main(%x: tensor<1x4xf32> {nn.name = "x", nn.scale = 0.05 : f32}) -> (tensor<1x4xf32> {nn.name = "relu"}, tensor<1x4xf32> {nn.name = "relu6"}, tensor<1x4xf32> {nn.name = "hard_tanh"}, tensor<1x4xf32> {nn.name = "floor"}) {
  %0 = nn.relu %x {nn.scale = 0.04 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu")
  %1 = nn.clip %x {min = 0.0 : f32, max = 6.0 : f32, nn.scale = 0.04 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu6")
  %2 = nn.clip %x {min = -1.0 : f32, max = 1.0 : f32, nn.scale = 0.04 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("hard_tanh")
  %3 = nn.clip %x {min = -0.33 : f32, nn.scale = 0.04 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("floor")
  func.return %0, %1, %2, %3 : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}

// CHECK:      %[[Q0:.*]] = fixed.quantize %x {scale = 0.05000000074505806 : f64} : tensor<1x4xf32> -> tensor<1x4xi8> loc("relu")
// CHECK-NEXT: %[[C0:.*]] = fixed.clamp %[[Q0]] {min = 0 : i64, max = 127 : i64, scale = 0.05000000074505806 : f64} : tensor<1x4xi8> -> tensor<1x4xi8> loc("relu")
// CHECK-NEXT: fixed.dequantize %[[C0]] {scale = 0.05000000074505806 : f64} : tensor<1x4xi8> -> tensor<1x4xf32> loc("relu")
// CHECK-NEXT: %[[Q1:.*]] = fixed.quantize %x {{.*}} loc("relu6")
// CHECK-NEXT: fixed.clamp %[[Q1]] {min = 0 : i64, max = 120 : i64, {{.*}} loc("relu6")
// CHECK-NEXT: fixed.dequantize
// CHECK-NEXT: %[[Q2:.*]] = fixed.quantize %x {{.*}} loc("hard_tanh")
// CHECK-NEXT: fixed.clamp %[[Q2]] {min = -20 : i64, max = 20 : i64, {{.*}} loc("hard_tanh")
// CHECK-NEXT: fixed.dequantize
// CHECK-NEXT: %[[Q3:.*]] = fixed.quantize %x {{.*}} loc("floor")
// CHECK-NEXT: fixed.clamp %[[Q3]] {min = -7 : i64, max = 127 : i64, {{.*}} loc("floor")
// CHECK-NEXT: fixed.dequantize
// CHECK-NEXT: func.return
