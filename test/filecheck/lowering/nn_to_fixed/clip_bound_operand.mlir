// RUN: not xnpu-opt %s -p "lower-nn-to-fixed{host_fallback=false}" 2>&1 | filecheck %s

// A clip whose bound is known only at run time (an input here) has no integer form: one line
// naming the op and its node, and what to change.

func.func @main(%x: tensor<1x4xf32> {nn.name = "x", nn.scale = 0.05 : f32}, %hi: tensor<f32> {nn.name = "hi", nn.scale = 0.05 : f32}) -> (tensor<1x4xf32> {nn.name = "y"}) {
  %y = nn.clip %x max(%hi : tensor<f32>) {min = 0.0 : f32, nn.scale = 0.05 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("clip_7")
  func.return %y : tensor<1x4xf32>
}

// CHECK:      {{^}}xnpu-opt: error: {{.*}}clip_bound_operand.mlir: in pass 'lower-nn-to-fixed': 'nn.clip' at loc("clip_7"): clip with a bound computed at run time has no fixed-point lowering; make min and max constants (initializers) to quantize it{{$}}
// CHECK-NOT:  {{.}}
