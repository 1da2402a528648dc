// nn.add and nn.sub (seed 000, R10/R11): each input quantized at its own scale, one widening
// add/sub into int24 at s_add = max(s_l, s_r) / 2^15 (the per-input multipliers), then one
// rescale to int8 (the `direct` variant). The `two_stage` variant (the pass's default) then
// puts seed 000's int16 stage into that rescale, for adds and subs alike (@two_stage_add).
// Numbers: natives.py (add_inputs, add_rescale, two_stage).

// seed 000 add: int8 -> int24 -> int8 (one rescale by r_res)
pdl.pattern @add : benefit(1) {
  %a = pdl.operand
  %b = pdl.operand
  %t = pdl.type
  %root = pdl.operation "nn.add"(%a, %b : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %root {
    %as, %at = pdl.apply_native_rewrite "int8_codes"(%a : !pdl.value) : !pdl.attribute, !pdl.type
    %qa = pdl.operation "fixed.quantize"(%a : !pdl.value) {"scale" = %as} -> (%at : !pdl.type)
    %xa = pdl.result 0 of %qa
    %bs, %bt = pdl.apply_native_rewrite "int8_codes"(%b : !pdl.value) : !pdl.attribute, !pdl.type
    %qb = pdl.operation "fixed.quantize"(%b : !pdl.value) {"scale" = %bs} -> (%bt : !pdl.type)
    %xb = pdl.result 0 of %qb
    %lm, %ls, %rm, %rs, %ws, %wt = pdl.apply_native_rewrite "add_inputs"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.type
    %sum = pdl.operation "fixed.add"(%xa, %xb : !pdl.value, !pdl.value) {"lhs_multiplier" = %lm, "lhs_shift" = %ls, "rhs_multiplier" = %rm, "rhs_shift" = %rs, "scale" = %ws} -> (%wt : !pdl.type)
    %wide = pdl.result 0 of %sum
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %m, %s = pdl.apply_native_rewrite "add_rescale"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %rescale = pdl.operation "fixed.rescale"(%wide : !pdl.value) {"multiplier" = %m, "shift" = %s, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %rescale
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}

// seed 000 sub: int8 -> int24 -> int8 (one rescale by r_res)
pdl.pattern @sub : benefit(1) {
  %a = pdl.operand
  %b = pdl.operand
  %t = pdl.type
  %root = pdl.operation "nn.sub"(%a, %b : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %root {
    %as, %at = pdl.apply_native_rewrite "int8_codes"(%a : !pdl.value) : !pdl.attribute, !pdl.type
    %qa = pdl.operation "fixed.quantize"(%a : !pdl.value) {"scale" = %as} -> (%at : !pdl.type)
    %xa = pdl.result 0 of %qa
    %bs, %bt = pdl.apply_native_rewrite "int8_codes"(%b : !pdl.value) : !pdl.attribute, !pdl.type
    %qb = pdl.operation "fixed.quantize"(%b : !pdl.value) {"scale" = %bs} -> (%bt : !pdl.type)
    %xb = pdl.result 0 of %qb
    %lm, %ls, %rm, %rs, %ws, %wt = pdl.apply_native_rewrite "add_inputs"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.type
    %sum = pdl.operation "fixed.sub"(%xa, %xb : !pdl.value, !pdl.value) {"lhs_multiplier" = %lm, "lhs_shift" = %ls, "rhs_multiplier" = %rm, "rhs_shift" = %rs, "scale" = %ws} -> (%wt : !pdl.type)
    %wide = pdl.result 0 of %sum
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %m, %s = pdl.apply_native_rewrite "add_rescale"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %rescale = pdl.operation "fixed.rescale"(%wide : !pdl.value) {"multiplier" = %m, "shift" = %s, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %rescale
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}

// seed 000 two-stage requantization of an add's or sub's int24 sum: -> int16 (truncating
// shift rs1) -> int8 (rescale r_res * 2^rs1)
pdl.pattern @two_stage_add : benefit(1) {
  %wide = pdl.operand
  %t = pdl.type
  %ys = pdl.attribute
  %rescale = pdl.operation "fixed.rescale"(%wide : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
  %variant = pdl.attribute = "two_stage"
  pdl.apply_native_constraint "add_variant_is"(%variant : !pdl.attribute)
  pdl.apply_native_constraint "int24_sum_to_int8"(%rescale : !pdl.operation)
  pdl.rewrite %rescale {
    %rs1, %hs, %ht, %m, %s = pdl.apply_native_rewrite "two_stage"(%rescale : !pdl.operation) : !pdl.attribute, !pdl.attribute, !pdl.type, !pdl.attribute, !pdl.attribute
    %truncate = pdl.attribute = 0 : i64
    %stage = pdl.operation "fixed.shift"(%wide : !pdl.value) {"shift" = %rs1, "rounding" = %truncate, "scale" = %hs} -> (%ht : !pdl.type)
    %narrow = pdl.result 0 of %stage
    %y = pdl.operation "fixed.rescale"(%narrow : !pdl.value) {"multiplier" = %m, "shift" = %s, "scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
  }
}
