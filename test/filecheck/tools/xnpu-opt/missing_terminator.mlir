// RUN: not xnpu-opt %s 2>&1 | filecheck %s

// A block without its terminator is checked by the block, not by an op's verifier: the error
// is still one line at the op that ends the block.

func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %y = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32> loc("Relu_1")
}

// CHECK:      {{^}}{{.*}}missing_terminator.mlir:7:3: error: 'nn.relu' at loc("Relu_1"): Operation nn.relu terminates block in single-block region but is not a terminator{{$}}
// CHECK-NOT:  {{.}}
