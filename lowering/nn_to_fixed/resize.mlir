// Resize by integer factors. Nearest moves codes (R16): the input's codes at the output scale
// (refine_scales made the two the same), one source row and column per output row and column.
// Linear sums two rows and two columns with integer weights into int32 and rescales by
// s_in / (Dy * Dx * s_out) (R17). Numbers: natives.py (nearest_source_maps,
// linear_resize_taps, linear_resize_rescale).

// nearest: quantize at the output scale, gather the source rows and columns, dequantize
pdl.pattern @resize_nearest : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %mode = pdl.attribute = "nearest"
  %root = pdl.operation "nn.resize"(%x : !pdl.value) {"mode" = %mode} -> (%t : !pdl.type)
  pdl.rewrite %root {
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %xt = pdl.apply_native_rewrite "int8_type"(%x : !pdl.value) : !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %ys} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %rows, %cols = pdl.apply_native_rewrite "nearest_source_maps"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %moved = pdl.operation "fixed.resize"(%q : !pdl.value) {"rows" = %rows, "cols" = %cols, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %moved
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}

// linear: quantize, the int32 weighted sums of two rows and two columns, rescale, dequantize
pdl.pattern @resize_linear : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %mode = pdl.attribute = "linear"
  %root = pdl.operation "nn.resize"(%x : !pdl.value) {"mode" = %mode} -> (%t : !pdl.type)
  pdl.rewrite %root {
    %xs, %xt = pdl.apply_native_rewrite "int8_codes"(%x : !pdl.value) : !pdl.attribute, !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %xs} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %rows, %row_weights, %cols, %col_weights, %ss, %st = pdl.apply_native_rewrite "linear_resize_taps"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.type
    %sums = pdl.operation "fixed.resize_linear"(%q : !pdl.value) {"rows" = %rows, "row_weights" = %row_weights, "cols" = %cols, "col_weights" = %col_weights, "scale" = %ss} -> (%st : !pdl.type)
    %acc = pdl.result 0 of %sums
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %m, %s = pdl.apply_native_rewrite "linear_resize_rescale"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %rescale = pdl.operation "fixed.rescale"(%acc : !pdl.value) {"multiplier" = %m, "shift" = %s, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %rescale
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}
