// mul.mlir's one @mul pattern lowers every nn.mul in its own operand order: x * c and c * x with
// c an nn.constant, and the squeeze-excitation x [1,2,2,2] * g [1,2,1,1] either way round.
// The constant's quantize is folded by constant.mlir's @quantize_constant: c = [0.5, -1] at
// max|c| / 127 is the int8 data [64, -127], never a runtime quantize.
// x * c: 0.0625 * (1/127) / 0.0625 = 1/127 = 16513 * 2^-21; x * g: 2^-4 * 2^-7 / 2^-5 = 16384 * 2^-20.
// RUN: xnpu-opt %s -p lower-nn-to-fixed | filecheck %s

func.func @main(%x: tensor<1x2x2x2xf32> {nn.name = "x", nn.scale = 0.0625 : f32}, %g: tensor<1x2x1x1xf32> {nn.name = "g", nn.scale = 0.0078125 : f32}) -> (tensor<1x2x2x2xf32> {nn.name = "xc"}, tensor<1x2x2x2xf32> {nn.name = "cx"}, tensor<1x2x2x2xf32> {nn.name = "xg"}, tensor<1x2x2x2xf32> {nn.name = "gx"}) {
  %c = nn.constant dense<[[[[0.5]], [[-1.0]]]]> : tensor<1x2x1x1xf32>
  %0 = nn.mul %x, %c {nn.scale = 0.0625 : f32} : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x2x2xf32> loc("xc")
  %1 = nn.mul %c, %x {nn.scale = 0.0625 : f32} : (tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> loc("cx")
  %2 = nn.mul %x, %g {nn.scale = 0.03125 : f32} : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x2x2xf32> loc("xg")
  %3 = nn.mul %g, %x {nn.scale = 0.03125 : f32} : (tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> loc("gx")
  func.return %0, %1, %2, %3 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// CHECK-NOT:  nn.constant
// CHECK:      %[[X1:.*]] = fixed.quantize %x {scale = 6.250000e-02 : f64} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xi8> loc("xc")
// CHECK-NEXT: %[[C1:.*]] = fixed.constant dense<{{\[\[\[\[}}64]], {{\[\[}}-127]]]]> : tensor<1x2x1x1xi8> loc("xc")
// CHECK-NEXT: %[[P1:.*]] = fixed.mul %[[X1]], %[[C1]] {{.*}} : (tensor<1x2x2x2xi8>, tensor<1x2x1x1xi8>) -> tensor<1x2x2x2xi16> loc("xc")
// CHECK-NEXT: %[[Y1:.*]] = fixed.rescale %[[P1]] {multiplier = array<i64: 16513>, shift = array<i64: 21>, scale = 6.250000e-02 : f64} : tensor<1x2x2x2xi16> -> tensor<1x2x2x2xi8> loc("xc")
// CHECK-NEXT: fixed.dequantize %[[Y1]] {scale = 6.250000e-02 : f64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xf32> loc("xc")
// CHECK-NEXT: %[[C2:.*]] = fixed.constant dense<{{\[\[\[\[}}64]], {{\[\[}}-127]]]]> : tensor<1x2x1x1xi8> loc("cx")
// CHECK-NEXT: %[[X2:.*]] = fixed.quantize %x {scale = 6.250000e-02 : f64} {{.*}} loc("cx")
// CHECK-NEXT: %[[P2:.*]] = fixed.mul %[[C2]], %[[X2]] {{.*}} : (tensor<1x2x1x1xi8>, tensor<1x2x2x2xi8>) -> tensor<1x2x2x2xi16> loc("cx")
// CHECK-NEXT: fixed.rescale %[[P2]] {multiplier = array<i64: 16513>, shift = array<i64: 21>, {{.*}} loc("cx")
// CHECK-NEXT: fixed.dequantize
// CHECK-NEXT: %[[X3:.*]] = fixed.quantize %x {{.*}} loc("xg")
// CHECK-NEXT: %[[G3:.*]] = fixed.quantize %g {scale = 7.812500e-03 : f64} : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xi8> loc("xg")
// CHECK-NEXT: %[[P3:.*]] = fixed.mul %[[X3]], %[[G3]] {scale = 0.00048828125 : f64} : (tensor<1x2x2x2xi8>, tensor<1x2x1x1xi8>) -> tensor<1x2x2x2xi16> loc("xg")
// CHECK-NEXT: fixed.rescale %[[P3]] {multiplier = array<i64: 16384>, shift = array<i64: 20>, scale = 3.125000e-02 : f64} {{.*}} loc("xg")
// CHECK-NEXT: fixed.dequantize
// CHECK-NEXT: %[[G4:.*]] = fixed.quantize %g {{.*}} loc("gx")
// CHECK-NEXT: %[[X4:.*]] = fixed.quantize %x {{.*}} loc("gx")
// CHECK-NEXT: %[[P4:.*]] = fixed.mul %[[G4]], %[[X4]] {{.*}} : (tensor<1x2x1x1xi8>, tensor<1x2x2x2xi8>) -> tensor<1x2x2x2xi16> loc("gx")
// CHECK-NEXT: fixed.rescale %[[P4]] {multiplier = array<i64: 16384>, shift = array<i64: 20>, {{.*}} loc("gx")
// CHECK-NEXT: fixed.dequantize
// CHECK-NEXT: func.return
