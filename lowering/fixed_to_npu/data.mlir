// Data movement: reshapes, flattens, transposes and concatenations of int8 tensors are
// done by the DMA (views of the same bytes, or copies into place); npu-assign-layout
// decides which.

// reshape -> npu.reshape
pdl.pattern @reshape : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %op = pdl.operation "fixed.reshape"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.rewrite %op {
    %y = pdl.operation "npu.reshape"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %op with %y
  }
}

// flatten -> npu.reshape (the same row-major elements in two dimensions)
pdl.pattern @flatten : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %op = pdl.operation "fixed.flatten"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.rewrite %op {
    %y = pdl.operation "npu.reshape"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %op with %y
  }
}

// transpose -> npu.transpose
pdl.pattern @transpose : benefit(1) {
  %x = pdl.operand
  %perm = pdl.attribute
  %t = pdl.type
  %op = pdl.operation "fixed.transpose"(%x : !pdl.value) {"perm" = %perm} -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "move_fits"(%op : !pdl.operation)
  pdl.rewrite %op {
    %y = pdl.operation "npu.transpose"(%x : !pdl.value) {"perm" = %perm} -> (%t : !pdl.type)
    pdl.replace %op with %y
  }
}

// a transpose that swaps two blocks of axes ([1, C, L] -> [1, L, C]): the input as the map
// [1, A, 1, B], its NHWC order (one relayout by the DMA), read back in the result's shape
pdl.pattern @transpose_blocks : benefit(2) {
  %x = pdl.operand
  %t = pdl.type
  %op = pdl.operation "fixed.transpose"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "swaps_axis_blocks"(%op : !pdl.operation)
  pdl.rewrite %op {
    %map_type, %nhwc_type, %nhwc = pdl.apply_native_rewrite "axis_block_map"(%op : !pdl.operation) : !pdl.type, !pdl.type, !pdl.attribute
    %map = pdl.operation "npu.reshape"(%x : !pdl.value) -> (%map_type : !pdl.type)
    %m = pdl.result 0 of %map
    %swap = pdl.operation "npu.transpose"(%m : !pdl.value) {"perm" = %nhwc} -> (%nhwc_type : !pdl.type)
    %s = pdl.result 0 of %swap
    %y = pdl.operation "npu.reshape"(%s : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %op with %y
  }
}

// a transpose that swaps two blocks of axes ahead of a block it keeps last ([1, H, T, D] ->
// [1, T, H, D], attention heads): the input as the NHWC map of A rows of B pixels of C
// channels, its rows interleaved as phases (row a into columns a, a + A, ...), read back
pdl.pattern @transpose_blocks_ahead : benefit(2) {
  %x = pdl.operand
  %t = pdl.type
  %op = pdl.operation "fixed.transpose"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "swaps_axis_blocks_ahead"(%op : !pdl.operation)
  pdl.rewrite %op {
    %map_type, %to_nhwc, %nhwc_type, %factors, %offsets, %moved_type, %to_rows, %rows_type = pdl.apply_native_rewrite "axis_block_rows"(%op : !pdl.operation) : !pdl.type, !pdl.attribute, !pdl.type, !pdl.attribute, !pdl.attribute, !pdl.type, !pdl.attribute, !pdl.type
    %map = pdl.operation "npu.reshape"(%x : !pdl.value) -> (%map_type : !pdl.type)
    %m = pdl.result 0 of %map
    %nhwc = pdl.operation "npu.transpose"(%m : !pdl.value) {"perm" = %to_nhwc} -> (%nhwc_type : !pdl.type)
    %n = pdl.result 0 of %nhwc
    %phases = pdl.apply_native_rewrite "block_rows"(%op, %n : !pdl.operation, !pdl.value) : !pdl.range<value>
    %moved = pdl.operation "npu.interleave"(%phases : !pdl.range<value>) {"factors" = %factors, "offsets" = %offsets} -> (%moved_type : !pdl.type)
    %v = pdl.result 0 of %moved
    %rows = pdl.operation "npu.transpose"(%v : !pdl.value) {"perm" = %to_rows} -> (%rows_type : !pdl.type)
    %r = pdl.result 0 of %rows
    %y = pdl.operation "npu.reshape"(%r : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %op with %y
  }
}

// concat -> npu.concat
pdl.pattern @concat : benefit(1) {
  %xs = pdl.operands
  %axis = pdl.attribute
  %t = pdl.type
  %op = pdl.operation "fixed.concat"(%xs : !pdl.range<value>) {"axis" = %axis} -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%op : !pdl.operation)
  pdl.apply_native_constraint "move_fits"(%op : !pdl.operation)
  pdl.rewrite %op {
    %y = pdl.operation "npu.concat"(%xs : !pdl.range<value>) {"axis" = %axis} -> (%t : !pdl.type)
    pdl.replace %op with %y
  }
}

// a reshape of a constant (seed 002's kernels when the multiplier is a weight) is a constant
pdl.pattern @reshape_constant : benefit(2) {
  %ct = pdl.type
  %const = pdl.operation "fixed.constant" -> (%ct : !pdl.type)
  %c = pdl.result 0 of %const
  %t = pdl.type
  %op = pdl.operation "fixed.reshape"(%c : !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %op {
    %value = pdl.apply_native_rewrite "reshaped_constant"(%c, %t : !pdl.value, !pdl.type) : !pdl.value
    pdl.replace %op with (%value : !pdl.value)
  }
}
