// RUN: not xnpu-opt %s -o %t 2>&1 | filecheck %s

// A malformed file is one `file:line:col: error:` line, nothing else (no traceback).

func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nn.rectify %x : tensor<2xf32> -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// CHECK:      {{^}}{{.*}}malformed.mlir:6:19: error: Operation nn.rectify is not registered{{$}}
// CHECK-NOT:  {{.}}
