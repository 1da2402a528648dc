// RUN: xnpu-opt %s -p 'npu-assign-layout,npu-tile,npu-plan-sram,npu-allocate,lower-npu-to-isa' | filecheck %s

// A host segment (a softmax head that keeps float precision, and its int8 result that a relu
// on the accelerator reads on) becomes its description, isa.host_segment: its tensors in DDR
// (row-major, the float32 output 4 bytes an element) and its region as a function; then the
// hand-off SYNC halt=0 posting its token, located at the op it runs; the program continues
// after it and ends with SYNC halt=1. The float32 result is a program output as it is.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x4xf32> {nn.name = "x"}) -> (tensor<1x4xf32> {nn.name = "p"}, tensor<1x4xf32> {nn.name = "r"}) {
    %a = fixed.quantize %x {scale = 0.1 : f64} : tensor<1x4xf32> -> tensor<1x4xi8>
    %b = fixed.constant dense<0> : tensor<4xi32>
    %w = fixed.constant dense<127> : tensor<4x4xi8>
    %c = npu.conv %a, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16513>, shift = array<i64: 21>} : (tensor<1x4xi8>, tensor<4x4xi8>, tensor<4xi32>) -> tensor<1x4xi8> loc("fc")
    %p, %q = npu.host(%c) : (tensor<1x4xi8>) -> (tensor<1x4xf32>, tensor<1x4xi8>) {
    ^bb0(%in: tensor<1x4xi8>):
      %f = fixed.dequantize %in {scale = 0.05 : f64} : tensor<1x4xi8> -> tensor<1x4xf32> loc("prob")
      %s = nn.softmax %f {npu.host_reason = "'nn.softmax' has no fixed-point lowering (it runs in float)", axis = 1 : i64} : tensor<1x4xf32> -> tensor<1x4xf32> loc("prob")
      %i = fixed.quantize %s {scale = 0.0078125 : f64} : tensor<1x4xf32> -> tensor<1x4xi8> loc("prob")
      npu.host_yield %s, %i : tensor<1x4xf32>, tensor<1x4xi8>
    }
    %r = npu.clamp %q {min = 0 : i64, max = 127 : i64} : tensor<1x4xi8> -> tensor<1x4xi8> loc("relu")
    %y = fixed.dequantize %r {scale = 0.0078125 : f64} : tensor<1x4xi8> -> tensor<1x4xf32> loc("relu")
    func.return %p, %y : tensor<1x4xf32>, tensor<1x4xf32>
  }
}
// CHECK:      isa.io {name = "x", direction = "input", dtype = "int8", layout = "RAW", shape = array<i64: 1, 4>, scale = 1.000000e-01 : f64, zero_point = 0 : i64, ddr_addr = [[X:[0-9]+]] : i64}
// CHECK-NEXT: isa.io {name = "p", direction = "output", dtype = "float32", layout = "RAW", shape = array<i64: 1, 4>, scale = 1.000000e+00 : f64, zero_point = 0 : i64, ddr_addr = [[P:[0-9]+]] : i64}
// CHECK-NEXT: isa.io {name = "r", direction = "output", dtype = "int8", {{.*}} ddr_addr = [[R:[0-9]+]] : i64}
// CHECK:      isa.conv {{.*}} loc("fc")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = {{[0-9]+}}, ddr_addr = [[C:[0-9]+]], {{.*}} loc("fc")
// CHECK-NEXT: isa.host_segment 1 {
// CHECK-NEXT:   isa.io {name = "fc", direction = "input", dtype = "int8", layout = "RAW", shape = array<i64: 1, 4>, scale = 5.000000e-02 : f64, zero_point = 0 : i64, ddr_addr = [[C]] : i64}
// CHECK-NEXT:   isa.io {name = "prob", direction = "output", dtype = "float32", layout = "RAW", shape = array<i64: 1, 4>, scale = 1.000000e+00 : f64, zero_point = 0 : i64, ddr_addr = [[P]] : i64}
// CHECK-NEXT:   isa.io {name = "prob", direction = "output", dtype = "int8", layout = "RAW", shape = array<i64: 1, 4>, scale = 7.812500e-03 : f64, zero_point = 0 : i64, ddr_addr = [[Q:[0-9]+]] : i64}
// CHECK-NEXT:   func.func @host_segment_1(%{{.*}}: tensor<1x4xi8>) -> (tensor<1x4xf32>, tensor<1x4xi8>) {
// CHECK-NEXT:     fixed.dequantize
// CHECK-NEXT:     nn.softmax
// CHECK-NEXT:     fixed.quantize
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: isa.sync {halt = 0, token = 1} loc("prob")
// CHECK-NEXT: isa.load {layout = NHWC, elem_log2 = 0, sram_addr = {{[0-9]+}}, ddr_addr = [[Q]], {{.*}} loc("relu")
// CHECK-NEXT: isa.clamp {{.*}} loc("relu")
// CHECK-NEXT: isa.store {layout = NHWC, elem_log2 = 0, sram_addr = {{[0-9]+}}, ddr_addr = [[R]], {{.*}} loc("relu")
// CHECK-NEXT: isa.sync {halt = 1, token = 0}
