// The POOL unit: max over windows on the codes (R14), average as window sums times one
// (multiplier, shift) or one per output position, global average as the int32 sum over H x W
// rescaled by its only user.

// max pooling (no dilation) -> POOL max
pdl.pattern @max_pool : benefit(1) {
  %x = pdl.operand
  %kernel = pdl.attribute
  %strides = pdl.attribute
  %pads = pdl.attribute
  %ceil = pdl.attribute
  %t = pdl.type
  %pool = pdl.operation "fixed.max_pool"(%x : !pdl.value) {"kernel_shape" = %kernel, "strides" = %strides, "pads" = %pads, "ceil_mode" = %ceil} -> (%t : !pdl.type)
  pdl.apply_native_constraint "pool_fits"(%pool : !pdl.operation)
  pdl.rewrite %pool {
    %kind = pdl.attribute = "max"
    %y = pdl.operation "npu.pool"(%x : !pdl.value) {"kind" = %kind, "kernel_shape" = %kernel, "strides" = %strides, "pads" = %pads, "ceil_mode" = %ceil} -> (%t : !pdl.type)
    pdl.replace %pool with %y
  }
}

// average pooling to int8 -> POOL avg with its multipliers (one, or one per output position)
pdl.pattern @avg_pool : benefit(1) {
  %x = pdl.operand
  %kernel = pdl.attribute
  %strides = pdl.attribute
  %pads = pdl.attribute
  %ceil = pdl.attribute
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %pool = pdl.operation "fixed.avg_pool"(%x : !pdl.value) {"kernel_shape" = %kernel, "strides" = %strides, "pads" = %pads, "ceil_mode" = %ceil, "multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "pool_fits"(%pool : !pdl.operation)
  pdl.rewrite %pool {
    %kind = pdl.attribute = "avg"
    %y = pdl.operation "npu.pool"(%x : !pdl.value) {"kind" = %kind, "kernel_shape" = %kernel, "strides" = %strides, "pads" = %pads, "ceil_mode" = %ceil, "multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    pdl.replace %pool with %y
  }
}

// global average: the int32 sum + one rescale to int8 -> POOL global_avg
pdl.pattern @global_avg_pool : benefit(1) {
  %x = pdl.operand
  %pool = pdl.operation "fixed.global_avg_pool"(%x : !pdl.value)
  %sum = pdl.result 0 of %pool
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%sum : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "rescaled_to_i8"(%pool, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "one_pair"(%rescale : !pdl.operation)
  pdl.apply_native_constraint "pool_fits"(%pool : !pdl.operation)
  pdl.rewrite %rescale {
    %kind = pdl.attribute = "global_avg"
    %y = pdl.operation "npu.pool"(%x : !pdl.value) {"kind" = %kind, "multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %pool
  }
}
