// RUN: not xnpu-opt %s -p "lower-fixed-to-npu{target=xnpu_lite host_fallback=false}" 2>&1 | filecheck %s

// Without host fallback, what no pattern selects is one error naming the op, its node, the reason and the target:
// a unit the target lacks (seed 002's legalize, run before, would have made it a conv).

builtin.module {
  func.func @main(%a: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x4x2x2xf32> -> tensor<1x4x2x2xi8>
    %0 = fixed.mul %x, %x : (tensor<1x4x2x2xi8>, tensor<1x4x2x2xi8>) -> tensor<1x4x2x2xi16> loc("square")
    %1 = fixed.rescale %0 {multiplier = array<i64: 16597>, shift = array<i64: 20>} : tensor<1x4x2x2xi16> -> tensor<1x4x2x2xi8> loc("square")
    %2 = fixed.dequantize %1 {scale = 0.0625 : f64} : tensor<1x4x2x2xi8> -> tensor<1x4x2x2xf32>
    func.return %2 : tensor<1x4x2x2xf32>
  }
}
// CHECK: 'fixed.mul' at loc("square"): element-wise mul is not supported (supported: add, sub) (target xnpu_lite)
