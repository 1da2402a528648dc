// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s
// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target="%S/../../../python/data/xnpu_test_slow_eltwise.toml"}' | filecheck %s --check-prefix=SLOW

// x * c, c one value per channel (or one value), runs where the target's cost model says it
// is cheaper: on xnpu_default the ELTWISE mul with c in memory; on a target whose ELTWISE unit
// has one lane, a depthwise 1x1 CONV with c as its kernels (the scalar broadcast to every
// channel). A reshape of a constant is folded into a constant.

builtin.module {
  func.func @main(%a: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xi8>
    %c = fixed.constant dense<[[[[3]], [[-5]], [[7]], [[100]]]]> : tensor<1x4x1x1xi8>
    %0 = fixed.mul %c, %x : (tensor<1x4x1x1xi8>, tensor<1x4x8x8xi8>) -> tensor<1x4x8x8xi16> loc("scale")
    %1 = fixed.rescale %0 {multiplier = array<i64: 16597>, shift = array<i64: 20>} : tensor<1x4x8x8xi16> -> tensor<1x4x8x8xi8> loc("scale")
    %s = fixed.constant dense<9> : tensor<1xi8>
    %k = fixed.reshape %s : tensor<1xi8> -> tensor<1x1x1x1xi8> loc("scalar")
    %2 = fixed.mul %x, %k : (tensor<1x4x8x8xi8>, tensor<1x1x1x1xi8>) -> tensor<1x4x8x8xi16> loc("times9")
    %3 = fixed.rescale %2 {multiplier = array<i64: 16597>, shift = array<i64: 20>} : tensor<1x4x8x8xi16> -> tensor<1x4x8x8xi8> loc("times9")
    %4 = fixed.dequantize %1 {scale = 0.0625 : f64} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xf32>
    %5 = fixed.dequantize %3 {scale = 0.0625 : f64} : tensor<1x4x8x8xi8> -> tensor<1x4x8x8xf32>
    func.return %4, %5 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
  }
}

// CHECK:     npu.eltwise "mul" %x, %c {multiplier = 16597 : i64, shift = 20 : i64} : (tensor<1x4x8x8xi8>, tensor<1x4x1x1xi8>) -> tensor<1x4x8x8xi8> loc("scale")
// CHECK:     %[[K:.*]] = fixed.constant dense<{{\[\[\[\[}}9]]]]> : tensor<1x1x1x1xi8> loc("scalar")
// CHECK:     npu.eltwise "mul" %x, %[[K]]
// CHECK-NOT: npu.conv

// SLOW:      %[[W:.*]] = fixed.constant dense<{{\[\[\[\[}}3]]], {{\[\[\[}}-5]]], {{\[\[\[}}7]]], {{\[\[\[}}100]]]]> : tensor<4x1x1x1xi8> loc("scale")
// SLOW-NEXT: npu.conv %x, %[[W]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64, multiplier = array<i64: 16597>, shift = array<i64: 20>} : (tensor<1x4x8x8xi8>, tensor<4x1x1x1xi8>) -> tensor<1x4x8x8xi8> loc("scale")
// SLOW:      %[[S:.*]] = fixed.constant dense<9> : tensor<4x1x1x1xi8> loc("times9")
// SLOW-NEXT: npu.conv %x, %[[S]] {{{.*}}group = 4 : i64{{.*}}}
// SLOW-NOT:  npu.eltwise
