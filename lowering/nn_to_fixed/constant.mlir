// A quantized constant is folded at compile time: every lowering quantizes its float inputs
// alike, and this pattern turns the quantize of an nn.constant into the fixed.constant of its
// codes (natives.py: constant_codes), so `x * c` and `c * x` carry c as int8 data.

// quantize(nn.constant) at compile time: a fixed.constant of the codes
pdl.pattern @quantize_constant : benefit(1) {
  %const = pdl.operation "nn.constant"
  %c = pdl.result 0 of %const
  %scale = pdl.attribute
  %t = pdl.type
  %quantize = pdl.operation "fixed.quantize"(%c : !pdl.value) {"scale" = %scale} -> (%t : !pdl.type)
  pdl.rewrite %quantize {
    %codes = pdl.apply_native_rewrite "constant_codes"(%const, %scale, %t : !pdl.operation, !pdl.attribute, !pdl.type) : !pdl.attribute
    %folded = pdl.operation "fixed.constant" {"value" = %codes} -> (%t : !pdl.type)
    pdl.replace %quantize with %folded
  }
}
