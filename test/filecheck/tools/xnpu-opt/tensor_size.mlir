// RUN: xnpu-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// A tensor over the budget (core/budget.py: 256 MiB for one, 512 MiB for a module's splat
// literals together) is refused before anything is allocated for it: the parser would expand
// these splats, an interpreter would allocate the argument.

func.func @splat(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %c = nn.constant dense<1.0> : tensor<100000x100000xf32>
  func.return %x : tensor<1x4xf32>
}
// CHECK: {{^}}{{.*}}tensor_size.mlir:8:33: error: dense literal: a 100000x100000 f32 tensor (37.3 GiB) is over the 256 MiB budget for one tensor{{$}}

// -----

func.func @argument(%x: tensor<100000x100000xf32>) -> tensor<100000x100000xf32> {
  %0 = nn.relu %x : tensor<100000x100000xf32> -> tensor<100000x100000xf32>
  func.return %0 : tensor<100000x100000xf32>
}
// CHECK: {{^}}{{.*}}tensor_size.mlir:15:1: error: 'func.func': a 100000x100000 f32 tensor (37.3 GiB) is over the 256 MiB budget for one tensor{{$}}

// -----

// each 192 MiB splat is within the budget for one tensor, three of them are not
func.func @splats(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %a = nn.constant dense<1.0> : tensor<50331648xf32>
  %b = nn.constant dense<2.0> : tensor<50331648xf32>
  %c = nn.constant dense<3.0> : tensor<50331648xf32>
  func.return %x : tensor<1x4xf32>
}
// CHECK: {{^}}{{.*}}tensor_size.mlir:27:33: error: splat literals: 576 MiB of tensors at once is over the 512 MiB budget{{$}}

// -----

// brackets nested deeper than MAX_NESTING (64): xDSL's parser recursed until Python's limit
func.func @deep(%x: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {deep = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]} {
  func.return %x : tensor<1x4xf32>
}
// CHECK: {{^}}{{.*}}tensor_size.mlir:35:139: error: brackets nested more than 64 deep{{$}}
