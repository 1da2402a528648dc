// Canonical operand order for the fusions of fuse-activations: a scalar constant operand of a
// commutative nn.add / nn.mul goes to the right (x + c, x * c), exactly equal in IEEE float,
// so each fusion pattern is written for one order of the constant. Only scalars move: the
// result type of a broadcast is the same either way.

// c + x -> x + c for a scalar constant c
pdl.pattern @scalar_add_operand_right : benefit(10) {
  %c = pdl.operand
  %x = pdl.operand
  %t = pdl.type
  %add = pdl.operation "nn.add"(%c, %x : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_scalar_constant"(%c : !pdl.value)
  pdl.apply_native_constraint "is_not_constant"(%x : !pdl.value)
  pdl.rewrite %add {
    %swapped = pdl.operation "nn.add"(%x, %c : !pdl.value, !pdl.value) -> (%t : !pdl.type)
    pdl.replace %add with %swapped
  }
}

// c * x -> x * c for a scalar constant c
pdl.pattern @scalar_mul_operand_right : benefit(10) {
  %c = pdl.operand
  %x = pdl.operand
  %t = pdl.type
  %mul = pdl.operation "nn.mul"(%c, %x : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_scalar_constant"(%c : !pdl.value)
  pdl.apply_native_constraint "is_not_constant"(%x : !pdl.value)
  pdl.rewrite %mul {
    %swapped = pdl.operation "nn.mul"(%x, %c : !pdl.value, !pdl.value) -> (%t : !pdl.type)
    pdl.replace %mul with %swapped
  }
}
