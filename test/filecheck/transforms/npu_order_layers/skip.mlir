// RUN: xnpu-opt %s -p npu-order-layers | filecheck %s

// %a is read by the next conv and, at the end, by a clamp whose result goes into a concat
// stored in place. The clamp is %a's last reader and writes to DDR anyway: it moves up to
// right after %a's other reader, so %a dies there instead of living through %c; the concat
// and what follows stay where they are.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x4x4x4xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi8>
    %w = fixed.constant dense<1> : tensor<2x2x1x1xi8>
    %a = npu.conv %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x2x4x4xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x4x4xi8> loc("a")
    %b = npu.conv %a, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x2x4x4xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x4x4xi8> loc("b")
    %c = npu.conv %b, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 15>} : (tensor<1x2x4x4xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x4x4xi8> loc("c")
    %t = npu.clamp %a {min = -3 : i64, max = 3 : i64} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8> loc("clip")
    %cat = npu.concat %c, %t {axis = 1 : i64} : (tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>) -> tensor<1x4x4x4xi8> loc("cat")
    %y = fixed.dequantize %cat {scale = 0.5 : f64} : tensor<1x4x4x4xi8> -> tensor<1x4x4x4xf32>
    func.return %y : tensor<1x4x4x4xf32>
  }
}

// CHECK:      %a = npu.conv %0, %w
// CHECK-NEXT: %b = npu.conv %a, %w
// CHECK-NEXT: %t = npu.clamp %a
// CHECK-NEXT: %c = npu.conv %b, %w
// CHECK-NEXT: %cat = npu.concat %c, %t
