// Pooling (R14). Max pool picks codes: max commutes with the (monotonic) scale, so it pools
// the input's codes at the output scale (refine_scales made the two the same). Average
// pools sum the codes and rescale by s_in / (count * s_out): per output position where
// padded windows count fewer taps. Numbers: natives.py (average_pool_rescale,
// global_average_pool_sum, global_average_pool_rescale).

// max pool on the codes, window attributes unchanged
pdl.pattern @max_pool : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %kernel = pdl.attribute
  %strides = pdl.attribute
  %pads = pdl.attribute
  %dilations = pdl.attribute
  %ceil = pdl.attribute
  %root = pdl.operation "nn.max_pool"(%x : !pdl.value) {"kernel_shape" = %kernel, "strides" = %strides, "pads" = %pads, "dilations" = %dilations, "ceil_mode" = %ceil} -> (%t : !pdl.type)
  pdl.rewrite %root {
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %xt = pdl.apply_native_rewrite "int8_type"(%x : !pdl.value) : !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %ys} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %pool = pdl.operation "fixed.max_pool"(%q : !pdl.value) {"kernel_shape" = %kernel, "strides" = %strides, "pads" = %pads, "ceil_mode" = %ceil, "scale" = %ys, "dilations" = %dilations} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %pool
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}

// window sums times one multiplier per output position (or one for all), saturated to int8
pdl.pattern @average_pool : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %kernel = pdl.attribute
  %strides = pdl.attribute
  %pads = pdl.attribute
  %ceil = pdl.attribute
  %root = pdl.operation "nn.average_pool"(%x : !pdl.value) {"kernel_shape" = %kernel, "strides" = %strides, "pads" = %pads, "ceil_mode" = %ceil} -> (%t : !pdl.type)
  pdl.rewrite %root {
    %xs, %xt = pdl.apply_native_rewrite "int8_codes"(%x : !pdl.value) : !pdl.attribute, !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %xs} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %m, %s = pdl.apply_native_rewrite "average_pool_rescale"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %pool = pdl.operation "fixed.avg_pool"(%q : !pdl.value) {"kernel_shape" = %kernel, "strides" = %strides, "pads" = %pads, "ceil_mode" = %ceil, "scale" = %ys, "multiplier" = %m, "shift" = %s} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %pool
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}

// an int32 sum over H x W, then one rescale by s_in / (H * W * s_out)
pdl.pattern @global_average_pool : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %root = pdl.operation "nn.global_average_pool"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %root {
    %xs, %xt = pdl.apply_native_rewrite "int8_codes"(%x : !pdl.value) : !pdl.attribute, !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %xs} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %ss, %st = pdl.apply_native_rewrite "global_average_pool_sum"(%root : !pdl.operation) : !pdl.attribute, !pdl.type
    %pool = pdl.operation "fixed.global_avg_pool"(%q : !pdl.value) {"scale" = %ss} -> (%st : !pdl.type)
    %sum = pdl.result 0 of %pool
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %m, %s = pdl.apply_native_rewrite "global_average_pool_rescale"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %rescale = pdl.operation "fixed.rescale"(%sum : !pdl.value) {"multiplier" = %m, "shift" = %s, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %rescale
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}
