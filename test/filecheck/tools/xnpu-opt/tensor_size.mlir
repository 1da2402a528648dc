// RUN: xnpu-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// A tensor of more than 2^27 elements is refused before anything is allocated for it: the
// parser would expand this splat to 10^10 floats, an interpreter would allocate the argument.

func.func @splat(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %c = nn.constant dense<1.0> : tensor<100000x100000xf32>
  func.return %x : tensor<1x4xf32>
}
// CHECK: {{^}}{{.*}}tensor_size.mlir:7:33: error: a dense literal of 10000000000 elements is over the 134217728-element limit{{$}}

// -----

func.func @argument(%x: tensor<100000x100000xf32>) -> tensor<100000x100000xf32> {
  %0 = nn.relu %x : tensor<100000x100000xf32> -> tensor<100000x100000xf32>
  func.return %0 : tensor<100000x100000xf32>
}
// CHECK: {{^}}{{.*}}tensor_size.mlir:14:1: error: 'func.func': a tensor of 10000000000 elements is over the 134217728-element limit{{$}}
