// RUN: xnpu-opt %s --target=xnpu_lite -p legalize | filecheck %s
// RUN: xnpu-opt %s --target=xnpu_default -p legalize | filecheck %s --check-prefix=DEFAULT

// Seed 001 method 2: on xnpu_lite (no clamp unit, saturation [-127, 127]) clip(q, -64, 100)
// becomes three identity depthwise 1x1 convs with biases 127-100 = 27,
// -(127-100)-(-64+127) = -90 and -64+127 = 63, each rescaled by the identity (16384, 14).
// The relu after the conv is the conv's relu flag and the clamp to the whole range is the
// saturation every unit applies: neither fires. xnpu_default has a clamp unit: no change.

builtin.module {
  func.func @main(%a: tensor<1x2x2x3xf32> {nn.name = "a"}) -> (tensor<1x2x2x3xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x2x3xf32> -> tensor<1x2x2x3xi8>
    %1 = fixed.clamp %0 {min = -64 : i64, max = 100 : i64} : tensor<1x2x2x3xi8> -> tensor<1x2x2x3xi8> loc("clip")
    %w = fixed.constant dense<2> : tensor<2x2x1x1xi8>
    %2 = fixed.conv2d %1, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x2x3xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x2x3xi32> loc("conv")
    %3 = fixed.rescale %2 {multiplier = array<i64: 16384>, shift = array<i64: 15>} : tensor<1x2x2x3xi32> -> tensor<1x2x2x3xi8> loc("conv")
    %4 = fixed.clamp %3 {min = 0 : i64, max = 127 : i64} : tensor<1x2x2x3xi8> -> tensor<1x2x2x3xi8> loc("relu")
    %5 = fixed.clamp %4 {min = -127 : i64, max = 127 : i64} : tensor<1x2x2x3xi8> -> tensor<1x2x2x3xi8> loc("whole_range")
    %6 = fixed.dequantize %5 {scale = 0.0078125 : f64} : tensor<1x2x2x3xi8> -> tensor<1x2x2x3xf32>
    func.return %6 : tensor<1x2x2x3xf32>
  }
}

// CHECK:      %[[X:.*]] = fixed.quantize
// CHECK-NEXT: %[[W:.*]] = fixed.constant dense<1> : tensor<2x1x1x1xi8> loc("clip")
// CHECK-NEXT: %[[B1:.*]] = fixed.constant dense<27> : tensor<2xi32> loc("clip")
// CHECK-NEXT: %[[C1:.*]] = fixed.conv2d %[[X]], %[[W]], %[[B1]] {{{.*}}group = 2 : i64}
// CHECK-NEXT: %[[R1:.*]] = fixed.rescale %[[C1]] {multiplier = array<i64: 16384>, shift = array<i64: 14>}
// CHECK-NEXT: %[[B2:.*]] = fixed.constant dense<-90> : tensor<2xi32> loc("clip")
// CHECK-NEXT: %[[C2:.*]] = fixed.conv2d %[[R1]], %[[W]], %[[B2]]
// CHECK-NEXT: %[[R2:.*]] = fixed.rescale %[[C2]] {multiplier = array<i64: 16384>, shift = array<i64: 14>}
// CHECK-NEXT: %[[B3:.*]] = fixed.constant dense<63> : tensor<2xi32> loc("clip")
// CHECK-NEXT: %[[C3:.*]] = fixed.conv2d %[[R2]], %[[W]], %[[B3]]
// CHECK-NEXT: %[[R3:.*]] = fixed.rescale %[[C3]] {multiplier = array<i64: 16384>, shift = array<i64: 14>}
// CHECK-NOT:  fixed.clamp {{.*}}loc("clip")
// CHECK:      fixed.conv2d %[[R3]]
// CHECK:      fixed.clamp {{.*}}{min = 0 : i64, max = 127 : i64}{{.*}}loc("relu")
// CHECK-NEXT: fixed.clamp {{.*}}{min = -127 : i64, max = 127 : i64}{{.*}}loc("whole_range")

// DEFAULT:     fixed.quantize
// DEFAULT-NEXT: fixed.clamp {{.*}}{min = -64 : i64, max = 100 : i64}
// DEFAULT-NOT: fixed.constant dense<1> : tensor<2x1x1x1xi8>
// DEFAULT-NOT: fixed.rescale {{.*}}shift = array<i64: 14>
