// LayerNorm as exporters before opset 17 spell it, rewritten to the one nn op (fuse-activations):
// d = x - mean(x), (d / sqrt(mean(d^2) + epsilon)) * scale + bias, the means over the last axis.
// ReduceMean, Pow and Sqrt are ONNX nodes kept for onnxruntime (nn.onnx); the natives check
// their op type, the axis and the exponent. The epsilon must be a positive scalar constant.

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + epsilon) * scale + bias = layer_norm(x) over the last axis
pdl.pattern @layer_norm_from_reduce_mean : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %mean = pdl.operation "nn.onnx"(%x : !pdl.value)
  %mean_value = pdl.result 0 of %mean
  %sub = pdl.operation "nn.sub"(%x, %mean_value : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %centred = pdl.result 0 of %sub
  %square = pdl.operation "nn.onnx"(%centred : !pdl.value)
  %squared = pdl.result 0 of %square
  %variance = pdl.operation "nn.onnx"(%squared : !pdl.value)
  %variance_value = pdl.result 0 of %variance
  %epsilon = pdl.operand
  %add = pdl.operation "nn.add"(%variance_value, %epsilon : !pdl.value, !pdl.value)
  %shifted = pdl.result 0 of %add
  %root = pdl.operation "nn.onnx"(%shifted : !pdl.value)
  %deviation = pdl.result 0 of %root
  %div = pdl.operation "nn.div"(%centred, %deviation : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %normalized = pdl.result 0 of %div
  %scale = pdl.operand
  %mul = pdl.operation "nn.mul"(%normalized, %scale : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %scaled = pdl.result 0 of %mul
  %bias = pdl.operand
  %out = pdl.operation "nn.add"(%scaled, %bias : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_mean_over_last_axis"(%mean : !pdl.operation)
  pdl.apply_native_constraint "is_square"(%square : !pdl.operation)
  pdl.apply_native_constraint "is_mean_over_last_axis"(%variance : !pdl.operation)
  pdl.apply_native_constraint "is_square_root"(%root : !pdl.operation)
  pdl.apply_native_constraint "is_positive_scalar_constant"(%epsilon : !pdl.value)
  pdl.rewrite %out {
    %axis = pdl.attribute = -1 : i64
    %epsilon_value = pdl.apply_native_rewrite "scalar_constant_attr"(%epsilon : !pdl.value) : !pdl.attribute
    %layer_norm = pdl.operation "nn.layer_norm"(%x, %scale, %bias : !pdl.value, !pdl.value, !pdl.value) {"axis" = %axis, "epsilon" = %epsilon_value} -> (%t : !pdl.type)
    pdl.replace %out with %layer_norm
  }
}
