// RUN: not xnpu-opt %s 2>&1 | filecheck %s
// RUN: xnpu-opt %s --split-input-file --parsing-diagnostics | filecheck %s --check-prefix=SPLIT

// A value used where its definition does not dominate the use is an error at the user, as
// MLIR reports it (xDSL accepts the forward reference; every interpreter would then fail).

func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %1 = nn.relu %0 : tensor<1x4xf32> -> tensor<1x4xf32>
  %0 = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32>
  func.return %1 : tensor<1x4xf32>
}

// CHECK:      {{^}}{{.*}}use_before_def.mlir:8:3: error: 'nn.relu': operand #0 is used before its definition{{$}}
// CHECK-NOT:  {{.}}

// SPLIT:      {{^}}{{.*}}use_before_def.mlir:8:3: error: 'nn.relu': operand #0 is used before its definition{{$}}
// SPLIT:      {{^}}{{.*}}use_before_def.mlir:25:3: error: 'func.return': operand #0 is used before its definition{{$}}
// SPLIT:      func.func @in_order
// SPLIT-NEXT:   %0 = nn.relu %x
// SPLIT-NEXT:   %1 = nn.relu %0

// -----

func.func @later(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  func.return %0 : tensor<1x4xf32>
  %0 = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32>
}

// -----

func.func @in_order(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %0 = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32>
  %1 = nn.relu %0 : tensor<1x4xf32> -> tensor<1x4xf32>
  func.return %1 : tensor<1x4xf32>
}
