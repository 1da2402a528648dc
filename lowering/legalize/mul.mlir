// Legalizations of element-wise fixed.mul for targets without an element-wise multiplier:
// seed 002. The i32 accumulator of a 1x1 depthwise conv is the exact product, so the mul's
// own rescale after it gives the mul's result bit for bit.

// seed 002, squeeze-excitation: x [1,C,H,W] * s [1,C,1,1] (either operand order: mul commutes) as a depthwise conv of x with s as C 1x1 kernels
pdl.pattern @channel_mul_as_depthwise_conv : benefit(3) {
  %x = pdl.operand
  %c = pdl.operand
  %pt = pdl.type
  %mul = pdl.operation "fixed.mul"(%x, %c : !pdl.value, !pdl.value) -> (%pt : !pdl.type)
  %p = pdl.result 0 of %mul
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%p : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "not_native"(%mul : !pdl.operation)
  pdl.apply_native_constraint "single_use"(%p : !pdl.value)
  pdl.apply_native_constraint "is_i8"(%rescale : !pdl.operation)
  pdl.apply_native_constraint "one_rescale_pair"(%m : !pdl.attribute)
  pdl.apply_native_constraint "channel_broadcast"(%x, %c : !pdl.value, !pdl.value)
  %dw = pdl.attribute = "depthwise"
  pdl.apply_native_constraint "target_has"(%dw : !pdl.attribute)
  pdl.rewrite %rescale {
    %strides, %pads, %dilations, %group, %acc = pdl.apply_native_rewrite "depthwise_1x1"(%x : !pdl.value) : !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.attribute, !pdl.type
    %kt = pdl.apply_native_rewrite "channel_kernel_type"(%c : !pdl.value) : !pdl.type
    %kernels = pdl.operation "fixed.reshape"(%c : !pdl.value) -> (%kt : !pdl.type)
    %k = pdl.result 0 of %kernels
    %conv = pdl.operation "fixed.conv2d"(%x, %k : !pdl.value, !pdl.value) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group} -> (%acc : !pdl.type)
    %a = pdl.result 0 of %conv
    %out = pdl.operation "fixed.rescale"(%a : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    pdl.replace %rescale with %out
    pdl.erase %mul
  }
}

// seed 002: two H x W x C maps (or [1, L, C] tokens, any one sample) reshaped to 1 x 1 x C1 (C1 = H*W*C), the second as C1 depthwise 1x1 kernels, the result reshaped back
pdl.pattern @mul_as_depthwise_conv : benefit(1) {
  %a = pdl.operand
  %b = pdl.operand
  %pt = pdl.type
  %mul = pdl.operation "fixed.mul"(%a, %b : !pdl.value, !pdl.value) -> (%pt : !pdl.type)
  %p = pdl.result 0 of %mul
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%p : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "not_native"(%mul : !pdl.operation)
  pdl.apply_native_constraint "single_use"(%p : !pdl.value)
  pdl.apply_native_constraint "is_i8"(%rescale : !pdl.operation)
  pdl.apply_native_constraint "one_rescale_pair"(%m : !pdl.attribute)
  pdl.apply_native_constraint "same_sample_shape"(%a, %b : !pdl.value, !pdl.value)
  %dw = pdl.attribute = "depthwise"
  pdl.apply_native_constraint "target_has"(%dw : !pdl.attribute)
  pdl.rewrite %rescale {
    %ft, %kt, %acc, %yt, %group = pdl.apply_native_rewrite "flat_mul_types"(%a : !pdl.value) : !pdl.type, !pdl.type, !pdl.type, !pdl.type, !pdl.attribute
    %strides = pdl.attribute = array<i64: 1, 1>
    %pads = pdl.attribute = array<i64: 0, 0, 0, 0>
    %dilations = pdl.attribute = array<i64: 1, 1>
    %flat = pdl.operation "fixed.reshape"(%a : !pdl.value) -> (%ft : !pdl.type)
    %fa = pdl.result 0 of %flat
    %kernels = pdl.operation "fixed.reshape"(%b : !pdl.value) -> (%kt : !pdl.type)
    %k = pdl.result 0 of %kernels
    %conv = pdl.operation "fixed.conv2d"(%fa, %k : !pdl.value, !pdl.value) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group} -> (%acc : !pdl.type)
    %acc_value = pdl.result 0 of %conv
    %out = pdl.operation "fixed.rescale"(%acc_value : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %out
    %back = pdl.operation "fixed.reshape"(%y : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %rescale with %back
    pdl.erase %mul
  }
}
