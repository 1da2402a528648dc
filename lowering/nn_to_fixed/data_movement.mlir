// Reshape, flatten and transpose move codes, never change them (R16): the input's codes at
// the output scale (refine_scales made it the input's), moved by the same op of `fixed`.

// reshape: the result type says the shape
pdl.pattern @reshape : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %root = pdl.operation "nn.reshape"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %root {
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %xt = pdl.apply_native_rewrite "int8_type"(%x : !pdl.value) : !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %ys} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %moved = pdl.operation "fixed.reshape"(%q : !pdl.value) {"scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %moved
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}

// flatten at the same axis
pdl.pattern @flatten : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %axis = pdl.attribute
  %root = pdl.operation "nn.flatten"(%x : !pdl.value) {"axis" = %axis} -> (%t : !pdl.type)
  pdl.rewrite %root {
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %xt = pdl.apply_native_rewrite "int8_type"(%x : !pdl.value) : !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %ys} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %moved = pdl.operation "fixed.flatten"(%q : !pdl.value) {"axis" = %axis, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %moved
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}

// transpose by the same permutation
pdl.pattern @transpose : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %perm = pdl.attribute
  %root = pdl.operation "nn.transpose"(%x : !pdl.value) {"perm" = %perm} -> (%t : !pdl.type)
  pdl.rewrite %root {
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %xt = pdl.apply_native_rewrite "int8_type"(%x : !pdl.value) : !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %ys} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %moved = pdl.operation "fixed.transpose"(%q : !pdl.value) {"perm" = %perm, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %moved
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}
