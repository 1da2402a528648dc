// hard-swish and hard-sigmoid as exporters spell them, each rewritten to the one nn op
// (fuse-activations). nn.add and nn.mul are commutative, so the driver tries both operand
// orders of each: x + 3 and 3 + x, x * relu6 and relu6 * x, * (1/6) and (1/6) *. Constants
// compare with float32 rounding (is_scalar_constant_close, float_attr_close); the clip bounds
// must be exactly 0 and 6, so a clip with another bound is never taken for relu6.

// relu6(x + 3) / 6 = hard_sigmoid(x) with alpha 1/6, beta 1/2 (x times it is hard-swish)
pdl.pattern @hard_sigmoid_from_relu6_div : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %three = pdl.operand
  %add = pdl.operation "nn.add"(%x, %three : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %shifted = pdl.result 0 of %add
  %zero = pdl.attribute = 0.000000e+00 : f32
  %six = pdl.attribute = 6.000000e+00 : f32
  %clip = pdl.operation "nn.clip"(%shifted : !pdl.value) {"min" = %zero, "max" = %six} -> (%t : !pdl.type)
  %relu6 = pdl.result 0 of %clip
  %divisor = pdl.operand
  %scaled = pdl.operation "nn.div"(%relu6, %divisor : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %three_value = pdl.attribute = 3.000000e+00 : f32
  pdl.apply_native_constraint "is_scalar_constant_close"(%three, %three_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%divisor, %six : !pdl.value, !pdl.attribute)
  pdl.rewrite %scaled {
    %alpha = pdl.attribute = 0.166666672 : f32
    %beta = pdl.attribute = 5.000000e-01 : f32
    %hard_sigmoid = pdl.operation "nn.hard_sigmoid"(%x : !pdl.value) {"alpha" = %alpha, "beta" = %beta} -> (%t : !pdl.type)
    pdl.replace %scaled with %hard_sigmoid
  }
}

// relu6(x + 3) * (1/6) = hard_sigmoid(x) with alpha 1/6, beta 1/2 (x times it is hard-swish)
pdl.pattern @hard_sigmoid_from_relu6_mul : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %three = pdl.operand
  %add = pdl.operation "nn.add"(%x, %three : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %shifted = pdl.result 0 of %add
  %zero = pdl.attribute = 0.000000e+00 : f32
  %six = pdl.attribute = 6.000000e+00 : f32
  %clip = pdl.operation "nn.clip"(%shifted : !pdl.value) {"min" = %zero, "max" = %six} -> (%t : !pdl.type)
  %relu6 = pdl.result 0 of %clip
  %factor = pdl.operand
  %scaled = pdl.operation "nn.mul"(%relu6, %factor : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %three_value = pdl.attribute = 3.000000e+00 : f32
  %sixth = pdl.attribute = 0.166666672 : f32
  pdl.apply_native_constraint "is_scalar_constant_close"(%three, %three_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%factor, %sixth : !pdl.value, !pdl.attribute)
  pdl.rewrite %scaled {
    %alpha = pdl.attribute = 0.166666672 : f32
    %beta = pdl.attribute = 5.000000e-01 : f32
    %hard_sigmoid = pdl.operation "nn.hard_sigmoid"(%x : !pdl.value) {"alpha" = %alpha, "beta" = %beta} -> (%t : !pdl.type)
    pdl.replace %scaled with %hard_sigmoid
  }
}

// (x * relu6(x + 3)) / 6 = hard_swish(x)
pdl.pattern @hard_swish_from_relu6_div : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %three = pdl.operand
  %add = pdl.operation "nn.add"(%x, %three : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %shifted = pdl.result 0 of %add
  %zero = pdl.attribute = 0.000000e+00 : f32
  %six = pdl.attribute = 6.000000e+00 : f32
  %clip = pdl.operation "nn.clip"(%shifted : !pdl.value) {"min" = %zero, "max" = %six} -> (%t : !pdl.type)
  %relu6 = pdl.result 0 of %clip
  %mul = pdl.operation "nn.mul"(%x, %relu6 : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %product = pdl.result 0 of %mul
  %divisor = pdl.operand
  %scaled = pdl.operation "nn.div"(%product, %divisor : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %three_value = pdl.attribute = 3.000000e+00 : f32
  pdl.apply_native_constraint "is_scalar_constant_close"(%three, %three_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%divisor, %six : !pdl.value, !pdl.attribute)
  pdl.rewrite %scaled {
    %hard_swish = pdl.operation "nn.hard_swish"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %scaled with %hard_swish
  }
}

// (x * relu6(x + 3)) * (1/6) = hard_swish(x)
pdl.pattern @hard_swish_from_relu6_mul : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %three = pdl.operand
  %add = pdl.operation "nn.add"(%x, %three : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %shifted = pdl.result 0 of %add
  %zero = pdl.attribute = 0.000000e+00 : f32
  %six = pdl.attribute = 6.000000e+00 : f32
  %clip = pdl.operation "nn.clip"(%shifted : !pdl.value) {"min" = %zero, "max" = %six} -> (%t : !pdl.type)
  %relu6 = pdl.result 0 of %clip
  %mul = pdl.operation "nn.mul"(%x, %relu6 : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %product = pdl.result 0 of %mul
  %factor = pdl.operand
  %scaled = pdl.operation "nn.mul"(%product, %factor : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %three_value = pdl.attribute = 3.000000e+00 : f32
  %sixth = pdl.attribute = 0.166666672 : f32
  pdl.apply_native_constraint "is_scalar_constant_close"(%three, %three_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%factor, %sixth : !pdl.value, !pdl.attribute)
  pdl.rewrite %scaled {
    %hard_swish = pdl.operation "nn.hard_swish"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %scaled with %hard_swish
  }
}

// x * hard_sigmoid(x) with alpha 1/6 and beta 1/2 = hard_swish(x)
pdl.pattern @hard_swish_from_hard_sigmoid : benefit(1) {
  %t = pdl.type
  %x = pdl.operand : %t
  %alpha = pdl.attribute
  %beta = pdl.attribute
  %hard_sigmoid = pdl.operation "nn.hard_sigmoid"(%x : !pdl.value) {"alpha" = %alpha, "beta" = %beta} -> (%t : !pdl.type)
  %gate = pdl.result 0 of %hard_sigmoid
  %mul = pdl.operation "nn.mul"(%x, %gate : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %sixth = pdl.attribute = 0.166666672 : f32
  %half = pdl.attribute = 5.000000e-01 : f32
  pdl.apply_native_constraint "float_attr_close"(%alpha, %sixth : !pdl.attribute, !pdl.attribute)
  pdl.apply_native_constraint "float_attr_close"(%beta, %half : !pdl.attribute, !pdl.attribute)
  pdl.rewrite %mul {
    %hard_swish = pdl.operation "nn.hard_swish"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %mul with %hard_swish
  }
}
