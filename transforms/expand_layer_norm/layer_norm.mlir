// A LayerNorm over the last axis with constant scale and bias, spelled in ops the accelerator
// runs (expand-layer-norm): the mean a matmul by a constant matrix (a fully connected CONV,
// exact int32 sums), the variance a mean of squares (exact int32 sums of squared codes), the
// reciprocal deviation a 256-entry table, the deviation times the scale a matmul of one row
// (each token's value spread along its C channels, times scale[c]):
//   d = x - x @ J/C,  r = reciprocal_sqrt(mean_square(d), epsilon),  y = d * (r @ scale) + bias
// Natives: __init__.py (the constant matrices, the variance's type, the epsilon).

// layer_norm(x, scale, bias) over the last axis = d * (r @ scale) + bias
pdl.pattern @layer_norm_on_units : benefit(1) {
  %t = pdl.type
  %x = pdl.operand : %t
  %scale = pdl.operand
  %bias = pdl.operand
  %ln = pdl.operation "nn.layer_norm"(%x, %scale, %bias : !pdl.value, !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "normalizes_last_axis_by_constants"(%ln : !pdl.operation)
  pdl.rewrite %ln {
    %means, %scale_row, %vt, %epsilon = pdl.apply_native_rewrite "layer_norm_matrices"(%ln : !pdl.operation) : !pdl.value, !pdl.value, !pdl.type, !pdl.attribute
    %mean = pdl.operation "nn.matmul"(%x, %means : !pdl.value, !pdl.value) -> (%t : !pdl.type)
    %m = pdl.result 0 of %mean
    %sub = pdl.operation "nn.sub"(%x, %m : !pdl.value, !pdl.value) -> (%t : !pdl.type)
    %d = pdl.result 0 of %sub
    %variance = pdl.operation "nn.mean_square"(%d : !pdl.value) -> (%vt : !pdl.type)
    %v = pdl.result 0 of %variance
    %root = pdl.operation "nn.reciprocal_sqrt"(%v : !pdl.value) {"epsilon" = %epsilon} -> (%vt : !pdl.type)
    %r = pdl.result 0 of %root
    %spread = pdl.operation "nn.matmul"(%r, %scale_row : !pdl.value, !pdl.value) -> (%t : !pdl.type)
    %rs = pdl.result 0 of %spread
    %mul = pdl.operation "nn.mul"(%d, %rs : !pdl.value, !pdl.value) -> (%t : !pdl.type)
    %n = pdl.result 0 of %mul
    %out = pdl.operation "nn.add"(%n, %bias : !pdl.value, !pdl.value) -> (%t : !pdl.type)
    pdl.replace %ln with %out
  }
}
