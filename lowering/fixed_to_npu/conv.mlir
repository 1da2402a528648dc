// The CONV unit: R13's int8 convolution (or fully connected layer) with int32 accumulation,
// rescaled to int8 by its only user (R9). The rescale is the root: the matcher reaches the
// convolution through its operand.

// a dilation the unit lacks, on constant kernels: the same convolution with zeros between the taps (exact)
pdl.pattern @dense_dilated_kernel : benefit(2) {
  %x = pdl.operand
  %w = pdl.operand
  %bias = pdl.operands
  %strides = pdl.attribute
  %pads = pdl.attribute
  %dilations = pdl.attribute
  %group = pdl.attribute
  %t = pdl.type
  %conv = pdl.operation "fixed.conv2d"(%x, %w, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group} -> (%t : !pdl.type)
  pdl.apply_native_constraint "dilation_beyond_unit"(%conv : !pdl.operation)
  pdl.rewrite %conv {
    %dense, %one = pdl.apply_native_rewrite "dense_dilated_conv"(%conv : !pdl.operation) : !pdl.value, !pdl.attribute
    %new = pdl.operation "fixed.conv2d"(%x, %dense, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %strides, "pads" = %pads, "dilations" = %one, "group" = %group} -> (%t : !pdl.type)
    pdl.replace %conv with %new
  }
}

// a 1-D kernel beyond the unit that is a multiple of its stride S (an STFT's frames), on
// constants: the input read as S channels of hops (rows of S, transposed), convolved with
// stride 1 by the folded kernels (the same products: exact)
pdl.pattern @kernel_as_hops : benefit(2) {
  %x = pdl.operand
  %w = pdl.operand
  %bias = pdl.operands
  %strides = pdl.attribute
  %pads = pdl.attribute
  %dilations = pdl.attribute
  %group = pdl.attribute
  %t = pdl.type
  %conv = pdl.operation "fixed.conv2d"(%x, %w, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group} -> (%t : !pdl.type)
  pdl.apply_native_constraint "kernel_folds_into_hops"(%conv : !pdl.operation)
  pdl.rewrite %conv {
    %rows_type, %hops_type, %map_type, %perm = pdl.apply_native_rewrite "hop_views"(%conv : !pdl.operation) : !pdl.type, !pdl.type, !pdl.type, !pdl.attribute
    %rows = pdl.operation "fixed.reshape"(%x : !pdl.value) -> (%rows_type : !pdl.type)
    %r = pdl.result 0 of %rows
    %hops = pdl.operation "fixed.transpose"(%r : !pdl.value) {"perm" = %perm} -> (%hops_type : !pdl.type)
    %h = pdl.result 0 of %hops
    %map = pdl.operation "fixed.reshape"(%h : !pdl.value) -> (%map_type : !pdl.type)
    %m = pdl.result 0 of %map
    %folded, %one, %none = pdl.apply_native_rewrite "hop_folded_conv"(%conv : !pdl.operation) : !pdl.value, !pdl.attribute, !pdl.attribute
    %new = pdl.operation "fixed.conv2d"(%m, %folded, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %one, "pads" = %none, "dilations" = %one, "group" = %group} -> (%t : !pdl.type)
    pdl.replace %conv with %new
  }
}

// conv2d (with or without bias) + rescale to int8 -> one CONV
pdl.pattern @conv : benefit(1) {
  %x = pdl.operand
  %w = pdl.operand
  %bias = pdl.operands
  %strides = pdl.attribute
  %pads = pdl.attribute
  %dilations = pdl.attribute
  %group = pdl.attribute
  %conv = pdl.operation "fixed.conv2d"(%x, %w, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group}
  %acc = pdl.result 0 of %conv
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%acc : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "rescaled_to_i8"(%conv, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "conv_fits"(%conv : !pdl.operation)
  pdl.rewrite %rescale {
    %y = pdl.operation "npu.conv"(%x, %w, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %strides, "pads" = %pads, "dilations" = %dilations, "group" = %group, "multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %conv
  }
}

// gemm (A x B, B constant) + rescale to int8 -> one CONV as a fully connected layer (M x K weights)
pdl.pattern @fully_connected : benefit(1) {
  %a = pdl.operand
  %rest = pdl.operands
  %gemm = pdl.operation "fixed.gemm"(%a, %rest : !pdl.value, !pdl.range<value>)
  %acc = pdl.result 0 of %gemm
  %m = pdl.attribute
  %s = pdl.attribute
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%acc : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
  pdl.apply_native_constraint "rescaled_to_i8"(%gemm, %rescale : !pdl.operation, !pdl.operation)
  pdl.apply_native_constraint "fully_connected_fits"(%gemm : !pdl.operation)
  pdl.rewrite %rescale {
    %w, %bias = pdl.apply_native_rewrite "fully_connected_weights"(%gemm : !pdl.operation) : !pdl.value, !pdl.range<value>
    %ones = pdl.attribute = array<i64: 1, 1>
    %zeros = pdl.attribute = array<i64: 0, 0, 0, 0>
    %group = pdl.attribute = 1 : i64
    %y = pdl.operation "npu.conv"(%a, %w, %bias : !pdl.value, !pdl.value, !pdl.range<value>) {"strides" = %ones, "pads" = %zeros, "dilations" = %ones, "group" = %group, "multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
    pdl.erase %gemm
  }
}
