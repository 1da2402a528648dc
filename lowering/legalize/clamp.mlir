// Legalizations of fixed.clamp (clip, relu6, hard_tanh, a relu the producer cannot flag) for
// targets without a clamp unit: seed 001 (docs/SEEDS 001, docs/extending.md).

// seed 001 method 1: hard_tanh on data q / 2^s as one identity depthwise 1x1 conv with weight 2^(7-s); saturation clips to [smin, smax]/128 (error <= 1/128), users absorb the new shift
pdl.pattern @clamp_by_pow2_saturation : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "not_native"(%clamp : !pdl.operation)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "is_map"(%x : !pdl.value)
  %method = pdl.attribute = "saturate"
  pdl.apply_native_constraint "clamp_method_is"(%clamp, %method : !pdl.operation, !pdl.attribute)
  pdl.rewrite %clamp {
    %strides, %pads, %dilations, %group, %acc = pdl.apply_native_rewrite "depthwise_1x1"(%x : !pdl.value) : !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.type
    %w, %wt = pdl.apply_native_rewrite "pow2_saturate_weight"(%clamp : !pdl.operation) : !pdl.attribute, !pdl.type
    %weight = pdl.operation "fixed.constant" {"value" = %w} -> (%wt : !pdl.type)
    %wv = pdl.result 0 of %weight
    %conv = pdl.operation "fixed.conv2d"(%x, %wv : !pdl.value, !pdl.value) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group} -> (%acc : !pdl.type)
    %a = pdl.result 0 of %conv
    %m = pdl.attribute = array<i64: 16384>
    %s = pdl.attribute = array<i64: 14>
    %rescale = pdl.operation "fixed.rescale"(%a : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    %y = pdl.result 0 of %rescale
    pdl.apply_native_rewrite "absorb_pow2_in_users"(%clamp, %y : !pdl.operation, !pdl.value)
    pdl.replace %clamp with (%y : !pdl.value)
  }
}

// seed 001 method 2 (exact): clip(q, lo, hi) as three saturating bias-adds (identity depthwise 1x1 convs, biases smax-hi, -(smax-hi)-(lo-smin), lo-smin)
pdl.pattern @clamp_as_bias_adds : benefit(1) {
  %t = pdl.type
  %x = pdl.operand : %t
  %lo = pdl.attribute
  %hi = pdl.attribute
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) {"min" = %lo, "max" = %hi} -> (%t : !pdl.type)
  pdl.apply_native_constraint "not_native"(%clamp : !pdl.operation)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "is_map"(%x : !pdl.value)
  %method = pdl.attribute = "bias"
  pdl.apply_native_constraint "clamp_method_is"(%clamp, %method : !pdl.operation, !pdl.attribute)
  pdl.rewrite %clamp {
    %strides, %pads, %dilations, %group, %acc = pdl.apply_native_rewrite "depthwise_1x1"(%x : !pdl.value) : !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.type
    %w, %wt = pdl.apply_native_rewrite "identity_depthwise_weight"(%x : !pdl.value) : !pdl.attribute, !pdl.type
    %b1, %b2, %b3, %bt = pdl.apply_native_rewrite "saturating_clamp_biases"(%x, %lo, %hi : !pdl.value, !pdl.attribute, !pdl.attribute) : !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.type
    %m = pdl.attribute = array<i64: 16384>
    %s = pdl.attribute = array<i64: 14>
    %weight = pdl.operation "fixed.constant" {"value" = %w} -> (%wt : !pdl.type)
    %wv = pdl.result 0 of %weight
    %bias1 = pdl.operation "fixed.constant" {"value" = %b1} -> (%bt : !pdl.type)
    %bias1v = pdl.result 0 of %bias1
    %conv1 = pdl.operation "fixed.conv2d"(%x, %wv, %bias1v : !pdl.value, !pdl.value, !pdl.value) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group} -> (%acc : !pdl.type)
    %a1 = pdl.result 0 of %conv1
    %r1 = pdl.operation "fixed.rescale"(%a1 : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    %y1 = pdl.result 0 of %r1
    %bias2 = pdl.operation "fixed.constant" {"value" = %b2} -> (%bt : !pdl.type)
    %bias2v = pdl.result 0 of %bias2
    %conv2 = pdl.operation "fixed.conv2d"(%y1, %wv, %bias2v : !pdl.value, !pdl.value, !pdl.value) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group} -> (%acc : !pdl.type)
    %a2 = pdl.result 0 of %conv2
    %r2 = pdl.operation "fixed.rescale"(%a2 : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    %y2 = pdl.result 0 of %r2
    %bias3 = pdl.operation "fixed.constant" {"value" = %b3} -> (%bt : !pdl.type)
    %bias3v = pdl.result 0 of %bias3
    %conv3 = pdl.operation "fixed.conv2d"(%y2, %wv, %bias3v : !pdl.value, !pdl.value, !pdl.value) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group} -> (%acc : !pdl.type)
    %a3 = pdl.result 0 of %conv3
    %r3 = pdl.operation "fixed.rescale"(%a3 : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    %y3 = pdl.result 0 of %r3
    pdl.replace %clamp with (%y3 : !pdl.value)
  }
}
