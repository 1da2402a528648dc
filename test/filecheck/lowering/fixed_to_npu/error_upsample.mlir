// RUN: not xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default host_fallback=false}' 2>&1 | filecheck %s

// align_corners x2 weighs its two pixels by (out - 1 - rem, rem) / (out - 1), which varies
// with the position inside a phase: no convolution computes it, so nothing is selected and
// the reason is one line (target/legality.py).

builtin.module {
  func.func @main(%a: tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xi8>
    %l = fixed.resize_linear %x {rows = array<i64: 0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2>, row_weights = array<i64: 5, 0, 3, 2, 1, 4, 4, 1, 2, 3, 5, 0>, cols = array<i64: 0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2>, col_weights = array<i64: 5, 0, 3, 2, 1, 4, 4, 1, 2, 3, 5, 0>} : tensor<1x2x3x3xi8> -> tensor<1x2x6x6xi32> loc("up_corners")
    %y = fixed.rescale %l {multiplier = array<i64: 20972>, shift = array<i64: 19>} : tensor<1x2x6x6xi32> -> tensor<1x2x6x6xi8> loc("up_corners")
    %0 = fixed.dequantize %y {scale = 0.0078125 : f64} : tensor<1x2x6x6xi8> -> tensor<1x2x6x6xf32>
    func.return %0 : tensor<1x2x6x6xf32>
  }
}
// CHECK: 'fixed.resize_linear' at loc("up_corners"): linear resize: its output rows read pixels or weights that vary with the position (as align_corners does); no unit computes them (target xnpu_default)
