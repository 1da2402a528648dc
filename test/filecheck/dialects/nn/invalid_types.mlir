// RUN: xnpu-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Type constraints checked while an op is parsed are reported at the op, with the line
// counted from the start of the whole file.

func.func @relu_of_ints(%x: tensor<2xi32>) -> tensor<2xi32> {
  %y = nn.relu %x : tensor<2xi32> -> tensor<2xi32>
  func.return %y : tensor<2xi32>
}

// CHECK: invalid_types.mlir:7:3: error: i32 should be of base attribute f32

// -----

func.func @add_of_memref(%x: memref<2xf32>) -> tensor<2xf32> {
  %y = nn.add %x, %x : (memref<2xf32>, memref<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// CHECK: invalid_types.mlir:16:3: error: memref<2xf32> should be of base attribute tensor
