// RUN: xnpu-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// A literal its element type cannot hold is a parse error at the op, not a Python exception.

func.func @int8() -> tensor<4xi8> {
  %0 = fixed.constant dense<[1000, 1, 2, 3]> : tensor<4xi8>
  func.return %0 : tensor<4xi8>
}
// CHECK: {{^}}{{.*}}literal_range.mlir:6:3: error: Integer value 1000 is out of range for type i8 which supports values in the range [-128, 256){{$}}

// -----

func.func @f32() -> tensor<2xf32> {
  %0 = nn.constant dense<[1.0e40, 1.0]> : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: {{^}}{{.*}}literal_range.mlir:14:3: error: a literal is out of range for its type (float too large to pack with f format){{$}}

// -----

// A hex blob one byte longer than its type: xDSL keeps the extra byte, which nothing can read.
func.func @hex() -> tensor<1xf32> {
  %0 = nn.constant dense<"0x0000803F00"> : tensor<1xf32>
  func.return %0 : tensor<1xf32>
}
// CHECK: {{^}}{{.*}}literal_range.mlir:23:25: error: the dense literal holds 5 bytes, its type tensor<1xf32> needs 4{{$}}
