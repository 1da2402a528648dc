// RUN: xnpu-opt %s -p 'lower-fixed-to-npu{target=xnpu_default}' | filecheck %s

// The ELTWISE unit (eltwise.mlir patterns): seed 000's two-stage add (int24, >> 8 into
// int16, rescale) and direct sub are one instruction each; an add whose first operand is
// the per-channel one has its operands and input rescales swapped (the unit reads the first
// whole); a mul by a per-channel scale is matched in either operand order (one pattern: mul
// commutes) with the full map first. A clamp after the add is its CLAMP epilogue.

builtin.module {
  func.func @main(%a: tensor<1x4x2x2xf32>, %c: tensor<1x4x1x1xf32>) -> (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) {
    %x = fixed.quantize %a {scale = 0.0078125 : f64} : tensor<1x4x2x2xf32> -> tensor<1x4x2x2xi8>
    %s = fixed.quantize %c {scale = 0.0078125 : f64} : tensor<1x4x1x1xf32> -> tensor<1x4x1x1xi8>
    %0 = fixed.add %x, %x {lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 22668 : i64, rhs_shift = 0 : i64} : (tensor<1x4x2x2xi8>, tensor<1x4x2x2xi8>) -> tensor<1x4x2x2xi24> loc("add")
    %1 = fixed.shift %0 {shift = 8 : i64, rounding = 0 : i64} : tensor<1x4x2x2xi24> -> tensor<1x4x2x2xi16> loc("add")
    %2 = fixed.rescale %1 {multiplier = array<i64: 26274>, shift = array<i64: 22>} : tensor<1x4x2x2xi16> -> tensor<1x4x2x2xi8> loc("add")
    %3 = fixed.clamp %2 {min = -50 : i64, max = 60 : i64} : tensor<1x4x2x2xi8> -> tensor<1x4x2x2xi8> loc("clip")
    %4 = fixed.sub %x, %s {lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64} : (tensor<1x4x2x2xi8>, tensor<1x4x1x1xi8>) -> tensor<1x4x2x2xi24> loc("sub")
    %5 = fixed.rescale %4 {multiplier = array<i64: 26274>, shift = array<i64: 30>} : tensor<1x4x2x2xi24> -> tensor<1x4x2x2xi8> loc("sub")
    %6 = fixed.add %s, %x {lhs_multiplier = 20000 : i64, lhs_shift = 1 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64} : (tensor<1x4x1x1xi8>, tensor<1x4x2x2xi8>) -> tensor<1x4x2x2xi24> loc("swapped_add")
    %7 = fixed.rescale %6 {multiplier = array<i64: 26274>, shift = array<i64: 30>} : tensor<1x4x2x2xi24> -> tensor<1x4x2x2xi8> loc("swapped_add")
    %8 = fixed.mul %s, %x : (tensor<1x4x1x1xi8>, tensor<1x4x2x2xi8>) -> tensor<1x4x2x2xi16> loc("se")
    %9 = fixed.rescale %8 {multiplier = array<i64: 16597>, shift = array<i64: 20>} : tensor<1x4x2x2xi16> -> tensor<1x4x2x2xi8> loc("se")
    %10 = fixed.dequantize %3 {scale = 0.0625 : f64} : tensor<1x4x2x2xi8> -> tensor<1x4x2x2xf32>
    %11 = fixed.dequantize %5 {scale = 0.0625 : f64} : tensor<1x4x2x2xi8> -> tensor<1x4x2x2xf32>
    %12 = fixed.dequantize %7 {scale = 0.0625 : f64} : tensor<1x4x2x2xi8> -> tensor<1x4x2x2xf32>
    %13 = fixed.dequantize %9 {scale = 0.0625 : f64} : tensor<1x4x2x2xi8> -> tensor<1x4x2x2xf32>
    func.return %10, %11, %12, %13 : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>
  }
}

// CHECK:      %[[X:.*]] = fixed.quantize %a
// CHECK-NEXT: %[[S:.*]] = fixed.quantize %c
// CHECK-NEXT: npu.eltwise "add" %[[X]], %[[X]] {multiplier = 26274 : i64, shift = 22 : i64, lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 22668 : i64, rhs_shift = 0 : i64, pre_shift = 8 : i64, clamp = array<i64: -50, 60>} : (tensor<1x4x2x2xi8>, tensor<1x4x2x2xi8>) -> tensor<1x4x2x2xi8> loc(fused["add", "clip"])
// CHECK-NEXT: npu.eltwise "sub" %[[X]], %[[S]] {multiplier = 26274 : i64, shift = 30 : i64, lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64} : (tensor<1x4x2x2xi8>, tensor<1x4x1x1xi8>) -> tensor<1x4x2x2xi8> loc("sub")
// CHECK-NEXT: npu.eltwise "add" %[[X]], %[[S]] {multiplier = 26274 : i64, shift = 30 : i64, lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 20000 : i64, rhs_shift = 1 : i64} : (tensor<1x4x2x2xi8>, tensor<1x4x1x1xi8>) -> tensor<1x4x2x2xi8> loc("swapped_add")
// CHECK-NEXT: npu.eltwise "mul" %[[X]], %[[S]] {multiplier = 16597 : i64, shift = 20 : i64} : (tensor<1x4x2x2xi8>, tensor<1x4x1x1xi8>) -> tensor<1x4x2x2xi8> loc("se")
// CHECK-NOT:  fixed.{{add|sub|mul|shift|rescale|clamp}}
