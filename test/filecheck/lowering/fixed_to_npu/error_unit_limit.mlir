// RUN: not xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_lite host_fallback=false}' 2>&1 | filecheck %s

// Without host fallback, what no pattern selects is one error naming the op, its node, the reason and the target:
// a limit of the unit (target/legality.py).

builtin.module {
  func.func @main(%a: tensor<1x2x16x16xf32>) -> tensor<1x3x8x8xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x2x16x16xf32> -> tensor<1x2x16x16xi8>
    %w = fixed.constant dense<1> : tensor<3x2x9x9xi8>
    %0 = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x16x16xi8>, tensor<3x2x9x9xi8>) -> tensor<1x3x8x8xi32> loc("big_kernel")
    %1 = fixed.rescale %0 {multiplier = array<i64: 16384>, shift = array<i64: 20>} : tensor<1x3x8x8xi32> -> tensor<1x3x8x8xi8> loc("big_kernel")
    %2 = fixed.dequantize %1 {scale = 0.0625 : f64} : tensor<1x3x8x8xi8> -> tensor<1x3x8x8xf32>
    func.return %2 : tensor<1x3x8x8xf32>
  }
}
// CHECK: 'fixed.conv2d' at loc("big_kernel"): kernel 9x9 is outside [1, 7] (target xnpu_lite)
