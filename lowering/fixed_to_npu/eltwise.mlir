// The ELTWISE unit. add/sub (R10: each input through its own rescale into int24), seed 000's
// optional int16 stage (a truncating shift), and the rescale to int8 are one instruction; so
// are mul (R12's exact int16 product) and its rescale. The unit reads its first operand whole
// and its second whole, per channel or as one value.

// seed 000 two-stage: add/sub into int24, >> pre_shift into int16, rescale to int8
pdl.pattern @add_two_stage : benefit(2) {
  %wide = pdl.operation
  %w = pdl.result 0 of %wide
  %pre = pdl.attribute
  %zero = pdl.attribute = 0 : i64
  %stage = pdl.operation "fixed.shift"(%w : !pdl.value) {"shift" = %pre, "rounding" = %zero}
  %i16 = pdl.result 0 of %stage
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%i16 : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "widening_add"(%wide : !pdl.operation)
  pdl.apply_native_constraint "eltwise_fits"(%wide : !pdl.operation)
  pdl.apply_native_constraint "int16_stage"(%stage : !pdl.operation)
  pdl.apply_native_constraint "rescaled_to_i8"(%stage, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "one_pair"(%rescale : !pdl.operation)
  pdl.rewrite %rescale {
    %a, %b, %op, %lm, %ls, %rm, %rs = pdl.apply_native_rewrite "eltwise_operands"(%wide : !pdl.operation) : !pdl.value, !pdl.value, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute
    %m, %s = pdl.apply_native_rewrite "single_pair"(%rescale : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %y = pdl.operation "npu.eltwise"(%a, %b : !pdl.value, !pdl.value) {"op" = %op, "multiplier" = %m, "shift" = %s, "lhs_multiplier" = %lm, "lhs_shift" = %ls, "rhs_multiplier" = %rm, "rhs_shift" = %rs, "pre_shift" = %pre} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %stage
    pdl.erase %wide
  }
}

// seed 000 direct: add/sub into int24, rescale to int8
pdl.pattern @add_direct : benefit(1) {
  %wide = pdl.operation
  %w = pdl.result 0 of %wide
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%w : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "widening_add"(%wide : !pdl.operation)
  pdl.apply_native_constraint "eltwise_fits"(%wide : !pdl.operation)
  pdl.apply_native_constraint "rescaled_to_i8"(%wide, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "one_pair"(%rescale : !pdl.operation)
  pdl.rewrite %rescale {
    %a, %b, %op, %lm, %ls, %rm, %rs = pdl.apply_native_rewrite "eltwise_operands"(%wide : !pdl.operation) : !pdl.value, !pdl.value, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute
    %m, %s = pdl.apply_native_rewrite "single_pair"(%rescale : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %y = pdl.operation "npu.eltwise"(%a, %b : !pdl.value, !pdl.value) {"op" = %op, "multiplier" = %m, "shift" = %s, "lhs_multiplier" = %lm, "lhs_shift" = %ls, "rhs_multiplier" = %rm, "rhs_shift" = %rs} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %wide
  }
}

// mul + rescale to int8 -> ELTWISE mul; operands in either order (mul commutes), the full-shape one first
pdl.pattern @mul : benefit(1) {
  %a = pdl.operand
  %b = pdl.operand
  %mul = pdl.operation "fixed.mul"(%a, %b : !pdl.value, !pdl.value)
  %p = pdl.result 0 of %mul
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%p : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "full_shape_first"(%a, %mul : !pdl.value, !pdl.operation)
  pdl.apply_native_constraint "eltwise_fits"(%mul : !pdl.operation)
  pdl.apply_native_constraint "rescaled_to_i8"(%mul, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "one_pair"(%rescale : !pdl.operation)
  pdl.rewrite %rescale {
    %op = pdl.attribute = "mul"
    %m, %s = pdl.apply_native_rewrite "single_pair"(%rescale : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %y = pdl.operation "npu.eltwise"(%a, %b : !pdl.value, !pdl.value) {"op" = %op, "multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %mul
  }
}

// mul by a constant (one value, or one per channel) + rescale -> a depthwise 1x1 CONV with the
// constant as kernels, where the target's cost model says it takes fewer cycles than ELTWISE
// reading the constant from memory (both exact: R12's int16 product and R13's int32 sum of
// one product are the same integer)
pdl.pattern @mul_by_constant_as_conv : benefit(2) {
  %x = pdl.operand
  %ct = pdl.type
  %const = pdl.operation "fixed.constant" -> (%ct : !pdl.type)
  %c = pdl.result 0 of %const
  %mul = pdl.operation "fixed.mul"(%x, %c : !pdl.value, !pdl.value)
  %p = pdl.result 0 of %mul
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%p : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "rescaled_to_i8"(%mul, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "one_pair"(%rescale : !pdl.operation)
  pdl.apply_native_constraint "conv_cheaper_than_eltwise"(%mul, %x : !pdl.operation, !pdl.value)
  pdl.rewrite %rescale {
    %kernels, %strides, %pads, %dilations, %group = pdl.apply_native_rewrite "channel_kernels"(%x, %c : !pdl.value, !pdl.value) : !pdl.value, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute
    %y = pdl.operation "npu.conv"(%x, %kernels : !pdl.value, !pdl.value) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group, "multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %mul
  }
}
