// Upsampling as phases (target/phases.py): output position f * m + a of an axis is computed
// from input positions near m, so each phase a is a map of the input's size that a unit (or
// the DMA alone) makes, and the DMA interleaves the phases into the output by strided stores.
// The phases compute the fixed op's own integers: bit-identical. Any other form (align_corners'
// position-dependent maps, strides other than 2, ...) is not selected (target/legality.py says why).

// nearest by pixel replication (asymmetric/floor and the like): the input stored f_h * f_w times
pdl.pattern @resize_nearest : benefit(2) {
  %x = pdl.operand
  %t = pdl.type
  %op = pdl.operation "fixed.resize"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "resize_fits"(%op : !pdl.operation)
  pdl.apply_native_constraint "replicates"(%op : !pdl.operation)
  pdl.rewrite %op {
    %phases = pdl.apply_native_rewrite "nearest_phases"(%op, %x : !pdl.operation, !pdl.value) : !pdl.range<value>
    %factors, %offsets = pdl.apply_native_rewrite "phase_interleave"(%op : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %y = pdl.operation "npu.interleave"(%phases : !pdl.range<value>) {"factors" = %factors, "offsets" = %offsets} -> (%t : !pdl.type)
    pdl.replace %op with %y
  }
}

// nearest whose phases read shifted pixels (ceil, half_pixel with floor, ...): an edge pad, then the phases from their offsets
pdl.pattern @resize_nearest_shifted : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %op = pdl.operation "fixed.resize"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "resize_fits"(%op : !pdl.operation)
  pdl.rewrite %op {
    %pads, %pt = pdl.apply_native_rewrite "edge_pad"(%op : !pdl.operation) : !pdl.attribute, !pdl.type
    %edge = pdl.attribute = "edge"
    %pad = pdl.operation "npu.pad"(%x : !pdl.value) {"mode" = %edge, "pads" = %pads} -> (%pt : !pdl.type)
    %p = pdl.result 0 of %pad
    %phases = pdl.apply_native_rewrite "nearest_phases"(%op, %p : !pdl.operation, !pdl.value) : !pdl.range<value>
    %factors, %offsets = pdl.apply_native_rewrite "phase_interleave"(%op : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %y = pdl.operation "npu.interleave"(%phases : !pdl.range<value>) {"factors" = %factors, "offsets" = %offsets} -> (%t : !pdl.type)
    pdl.replace %op with %y
  }
}

// linear x2 (half_pixel) + its rescale: the edge-padded input, four depthwise 2x2 CONVs (kernels 1 3 / 3 9 and its mirrors, the fixed op's rescale), interleaved
pdl.pattern @resize_linear : benefit(1) {
  %x = pdl.operand
  %lin = pdl.operation "fixed.resize_linear"(%x : !pdl.value)
  %acc = pdl.result 0 of %lin
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%acc : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "rescaled_to_i8"(%lin, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "resize_fits"(%lin : !pdl.operation)
  pdl.rewrite %rescale {
    %pads, %pt = pdl.apply_native_rewrite "edge_pad"(%lin : !pdl.operation) : !pdl.attribute, !pdl.type
    %edge = pdl.attribute = "edge"
    %pad = pdl.operation "npu.pad"(%x : !pdl.value) {"mode" = %edge, "pads" = %pads} -> (%pt : !pdl.type)
    %p = pdl.result 0 of %pad
    %ones = pdl.attribute = array<i64: 1, 1>
    %valid = pdl.attribute = array<i64: 0, 0, 0, 0>
    %a0 = pdl.attribute = 0 : i64
    %a1 = pdl.attribute = 1 : i64
    %w00, %g00, %t00 = pdl.apply_native_rewrite "linear_phase"(%lin, %a0, %a0 : !pdl.operation, !pdl.attribute, !pdl.attribute) : !pdl.value, !pdl.attribute, !pdl.type
    %c00 = pdl.operation "npu.conv"(%p, %w00 : !pdl.value, !pdl.value) {"strides" = %ones, "pads" = %valid, "dilations" = %ones, "group" = %g00, "multiplier" = %m, "shift" = %s} -> (%t00 : !pdl.type)
    %y00 = pdl.result 0 of %c00
    %w01, %g01, %t01 = pdl.apply_native_rewrite "linear_phase"(%lin, %a0, %a1 : !pdl.operation, !pdl.attribute, !pdl.attribute) : !pdl.value, !pdl.attribute, !pdl.type
    %c01 = pdl.operation "npu.conv"(%p, %w01 : !pdl.value, !pdl.value) {"strides" = %ones, "pads" = %valid, "dilations" = %ones, "group" = %g01, "multiplier" = %m, "shift" = %s} -> (%t01 : !pdl.type)
    %y01 = pdl.result 0 of %c01
    %w10, %g10, %t10 = pdl.apply_native_rewrite "linear_phase"(%lin, %a1, %a0 : !pdl.operation, !pdl.attribute, !pdl.attribute) : !pdl.value, !pdl.attribute, !pdl.type
    %c10 = pdl.operation "npu.conv"(%p, %w10 : !pdl.value, !pdl.value) {"strides" = %ones, "pads" = %valid, "dilations" = %ones, "group" = %g10, "multiplier" = %m, "shift" = %s} -> (%t10 : !pdl.type)
    %y10 = pdl.result 0 of %c10
    %w11, %g11, %t11 = pdl.apply_native_rewrite "linear_phase"(%lin, %a1, %a1 : !pdl.operation, !pdl.attribute, !pdl.attribute) : !pdl.value, !pdl.attribute, !pdl.type
    %c11 = pdl.operation "npu.conv"(%p, %w11 : !pdl.value, !pdl.value) {"strides" = %ones, "pads" = %valid, "dilations" = %ones, "group" = %g11, "multiplier" = %m, "shift" = %s} -> (%t11 : !pdl.type)
    %y11 = pdl.result 0 of %c11
    %factors, %offsets = pdl.apply_native_rewrite "phase_interleave"(%lin : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %y = pdl.operation "npu.interleave"(%y00, %y01, %y10, %y11 : !pdl.value, !pdl.value, !pdl.value, !pdl.value) {"factors" = %factors, "offsets" = %offsets} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %lin
  }
}

// transposed convolution, stride 2 (+ bias) + its rescale: four CONVs by the flipped kernel's phase sub-kernels (zero padded), interleaved
pdl.pattern @conv_transpose : benefit(1) {
  %x = pdl.operand
  %w = pdl.operand
  %bias = pdl.operands
  %group = pdl.attribute
  %ct = pdl.operation "fixed.conv_transpose2d"(%x, %w, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"group" = %group}
  %acc = pdl.result 0 of %ct
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%acc : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "rescaled_to_i8"(%ct, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "conv_transpose_fits"(%ct : !pdl.operation)
  pdl.rewrite %rescale {
    %ones = pdl.attribute = array<i64: 1, 1>
    %r0 = pdl.attribute = 0 : i64
    %r1 = pdl.attribute = 1 : i64
    %w00, %pads00, %t00 = pdl.apply_native_rewrite "conv_transpose_phase"(%ct, %r0, %r0 : !pdl.operation, !pdl.attribute, !pdl.attribute) : !pdl.value, !pdl.attribute, !pdl.type
    %c00 = pdl.operation "npu.conv"(%x, %w00, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %ones, "pads" = %pads00, "dilations" = %ones, "group" = %group, "multiplier" = %m, "shift" = %s} -> (%t00 : !pdl.type)
    %y00 = pdl.result 0 of %c00
    %w01, %pads01, %t01 = pdl.apply_native_rewrite "conv_transpose_phase"(%ct, %r0, %r1 : !pdl.operation, !pdl.attribute, !pdl.attribute) : !pdl.value, !pdl.attribute, !pdl.type
    %c01 = pdl.operation "npu.conv"(%x, %w01, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %ones, "pads" = %pads01, "dilations" = %ones, "group" = %group, "multiplier" = %m, "shift" = %s} -> (%t01 : !pdl.type)
    %y01 = pdl.result 0 of %c01
    %w10, %pads10, %t10 = pdl.apply_native_rewrite "conv_transpose_phase"(%ct, %r1, %r0 : !pdl.operation, !pdl.attribute, !pdl.attribute) : !pdl.value, !pdl.attribute, !pdl.type
    %c10 = pdl.operation "npu.conv"(%x, %w10, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %ones, "pads" = %pads10, "dilations" = %ones, "group" = %group, "multiplier" = %m, "shift" = %s} -> (%t10 : !pdl.type)
    %y10 = pdl.result 0 of %c10
    %w11, %pads11, %t11 = pdl.apply_native_rewrite "conv_transpose_phase"(%ct, %r1, %r1 : !pdl.operation, !pdl.attribute, !pdl.attribute) : !pdl.value, !pdl.attribute, !pdl.type
    %c11 = pdl.operation "npu.conv"(%x, %w11, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %ones, "pads" = %pads11, "dilations" = %ones, "group" = %group, "multiplier" = %m, "shift" = %s} -> (%t11 : !pdl.type)
    %y11 = pdl.result 0 of %c11
    %factors, %offsets = pdl.apply_native_rewrite "phase_interleave"(%ct : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %y = pdl.operation "npu.interleave"(%y00, %y01, %y10, %y11 : !pdl.value, !pdl.value, !pdl.value, !pdl.value) {"factors" = %factors, "offsets" = %offsets} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %ct
  }
}
