// GELU and SiLU as exporters spell them, each rewritten to the one nn op (fuse-activations).
// Below the float level each becomes one 256-entry table instead of a div, an erf, an add and
// two muls (GELU) or a sigmoid and a mul (SiLU), with an int8 rounding between every two.
// nn.add and nn.mul are commutative, so the driver tries both operand orders of each; the
// constants compare with float32 rounding (is_scalar_constant_close). Erf is an ONNX node kept
// for onnxruntime (nn.onnx "Erf").

// x * (1 + erf(x / sqrt(2))) * 0.5 = gelu(x) (PyTorch's export of GELU before opset 20)
pdl.pattern @gelu_from_erf_div : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %root2 = pdl.operand
  %div = pdl.operation "nn.div"(%x, %root2 : !pdl.value, !pdl.value)
  %scaled = pdl.result 0 of %div
  %erf_type = pdl.attribute = "Erf"
  %erf = pdl.operation "nn.onnx"(%scaled : !pdl.value) {"op_type" = %erf_type}
  %erf_value = pdl.result 0 of %erf
  %one = pdl.operand
  %add = pdl.operation "nn.add"(%erf_value, %one : !pdl.value, !pdl.value)
  %gate = pdl.result 0 of %add
  %mul = pdl.operation "nn.mul"(%x, %gate : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %product = pdl.result 0 of %mul
  %half = pdl.operand
  %out = pdl.operation "nn.mul"(%product, %half : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %root2_value = pdl.attribute = 1.41421354 : f32
  %one_value = pdl.attribute = 1.000000e+00 : f32
  %half_value = pdl.attribute = 5.000000e-01 : f32
  pdl.apply_native_constraint "is_scalar_constant_close"(%root2, %root2_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%one, %one_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%half, %half_value : !pdl.value, !pdl.attribute)
  pdl.rewrite %out {
    %gelu = pdl.operation "nn.gelu"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %out with %gelu
  }
}

// x * (1 + erf(x * (1 / sqrt(2)))) * 0.5 = gelu(x)
pdl.pattern @gelu_from_erf_mul : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %inverse_root2 = pdl.operand
  %scale = pdl.operation "nn.mul"(%x, %inverse_root2 : !pdl.value, !pdl.value)
  %scaled = pdl.result 0 of %scale
  %erf_type = pdl.attribute = "Erf"
  %erf = pdl.operation "nn.onnx"(%scaled : !pdl.value) {"op_type" = %erf_type}
  %erf_value = pdl.result 0 of %erf
  %one = pdl.operand
  %add = pdl.operation "nn.add"(%erf_value, %one : !pdl.value, !pdl.value)
  %gate = pdl.result 0 of %add
  %mul = pdl.operation "nn.mul"(%x, %gate : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %product = pdl.result 0 of %mul
  %half = pdl.operand
  %out = pdl.operation "nn.mul"(%product, %half : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %inverse_root2_value = pdl.attribute = 0.707106769 : f32
  %one_value = pdl.attribute = 1.000000e+00 : f32
  %half_value = pdl.attribute = 5.000000e-01 : f32
  pdl.apply_native_constraint "is_scalar_constant_close"(%inverse_root2, %inverse_root2_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%one, %one_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%half, %half_value : !pdl.value, !pdl.attribute)
  pdl.rewrite %out {
    %gelu = pdl.operation "nn.gelu"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %out with %gelu
  }
}

// (x * 0.5) * (1 + erf(x / sqrt(2))) = gelu(x) (the half taken first, as TensorFlow exports it)
pdl.pattern @gelu_from_half_erf_div : benefit(2) {
  %t = pdl.type
  %x = pdl.operand : %t
  %root2 = pdl.operand
  %div = pdl.operation "nn.div"(%x, %root2 : !pdl.value, !pdl.value)
  %scaled = pdl.result 0 of %div
  %erf_type = pdl.attribute = "Erf"
  %erf = pdl.operation "nn.onnx"(%scaled : !pdl.value) {"op_type" = %erf_type}
  %erf_value = pdl.result 0 of %erf
  %one = pdl.operand
  %add = pdl.operation "nn.add"(%erf_value, %one : !pdl.value, !pdl.value)
  %gate = pdl.result 0 of %add
  %half = pdl.operand
  %halve = pdl.operation "nn.mul"(%x, %half : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %halved = pdl.result 0 of %halve
  %out = pdl.operation "nn.mul"(%halved, %gate : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %root2_value = pdl.attribute = 1.41421354 : f32
  %one_value = pdl.attribute = 1.000000e+00 : f32
  %half_value = pdl.attribute = 5.000000e-01 : f32
  pdl.apply_native_constraint "is_scalar_constant_close"(%root2, %root2_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%one, %one_value : !pdl.value, !pdl.attribute)
  pdl.apply_native_constraint "is_scalar_constant_close"(%half, %half_value : !pdl.value, !pdl.attribute)
  pdl.rewrite %out {
    %gelu = pdl.operation "nn.gelu"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %out with %gelu
  }
}

// x * sigmoid(x) = silu(x)
pdl.pattern @silu_from_sigmoid : benefit(1) {
  %t = pdl.type
  %x = pdl.operand : %t
  %sigmoid = pdl.operation "nn.sigmoid"(%x : !pdl.value) -> (%t : !pdl.type)
  %gate = pdl.result 0 of %sigmoid
  %mul = pdl.operation "nn.mul"(%x, %gate : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %mul {
    %silu = pdl.operation "nn.silu"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %mul with %silu
  }
}
