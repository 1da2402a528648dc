// relu, relu6, hard_tanh and clip (R8; seed 001's subject): a clamp of the int8 codes at the
// op's output scale. refine_scales gave the clamp its input's scale (or the input its
// clamp's), so the input is quantized at that one scale. Numbers: natives.py (clamp_bounds).

// relu / clip (relu6 = clip(0, 6), hard_tanh = clip(-1, 1)): quantize, clamp to the bounds' codes, dequantize
pdl.pattern @clamp : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %root = pdl.operation (%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_clamp"(%root : !pdl.operation)
  pdl.rewrite %root {
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %ys} -> (%yt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %lo, %hi = pdl.apply_native_rewrite "clamp_bounds"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %clamp = pdl.operation "fixed.clamp"(%q : !pdl.value) {"min" = %lo, "max" = %hi, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %clamp
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}
