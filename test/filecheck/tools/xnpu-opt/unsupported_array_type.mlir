// RUN: not xnpu-opt %s 2>&1 | filecheck %s

// A dense array of an element type xDSL cannot store (an i864) is a parse error at the op,
// not a NotImplementedError from inside the parser.

func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %y = nn.transpose %x {perm = array<i864: 0, 1, 2, 3>} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// CHECK:      {{^}}{{.*}}unsupported_array_type.mlir:7:3: error: unsupported: Format not implemented for i864{{$}}
// CHECK-NOT:  {{.}}
