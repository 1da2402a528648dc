// RUN: not xnpu-opt %s 2>&1 | filecheck %s

// A hex blob cut short (a truncated file) is an error at its opening quote, at once: xDSL's
// lexer would backtrack exponentially on the long unterminated string.

func.func @main() -> tensor<16xf32> {
  %0 = nn.constant dense<"0x0000000000000000000000000000000000000000000000000000000000000000000000000000000000 : tensor<16xf32>
  func.return %0 : tensor<16xf32>
}

// CHECK:      {{^}}{{.*}}unterminated_string.mlir:7:26: error: unterminated string literal (it must end on the line it starts){{$}}
// CHECK-NOT:  {{.}}
