// nn.mul (seed 000, R12): int8 x int8 -> exact int16 product, one rescale by s_l * s_r / s_out.
// fixed.mul broadcasts like nn.mul, so one pattern also lowers the squeeze-excitation
// x [1,C,H,W] * s [1,C,1,1] in either operand order, keeping the order of the float op; a
// constant operand's quantize becomes a fixed.constant (constant.mlir). Numbers: natives.py
// (mul_product, mul_rescale).

// seed 000 mul: quantize both inputs, exact int16 product, one rescale to int8
pdl.pattern @mul : benefit(1) {
  %a = pdl.operand
  %b = pdl.operand
  %t = pdl.type
  %root = pdl.operation "nn.mul"(%a, %b : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %root {
    %as, %at = pdl.apply_native_rewrite "int8_codes"(%a : !pdl.value) : !pdl.attribute, !pdl.type
    %qa = pdl.operation "fixed.quantize"(%a : !pdl.value) {"scale" = %as} -> (%at : !pdl.type)
    %xa = pdl.result 0 of %qa
    %bs, %bt = pdl.apply_native_rewrite "int8_codes"(%b : !pdl.value) : !pdl.attribute, !pdl.type
    %qb = pdl.operation "fixed.quantize"(%b : !pdl.value) {"scale" = %bs} -> (%bt : !pdl.type)
    %xb = pdl.result 0 of %qb
    %ps, %pt = pdl.apply_native_rewrite "mul_product"(%root : !pdl.operation) : !pdl.attribute, !pdl.type
    %mul = pdl.operation "fixed.mul"(%xa, %xb : !pdl.value, !pdl.value) {"scale" = %ps} -> (%pt : !pdl.type)
    %product = pdl.result 0 of %mul
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %m, %s = pdl.apply_native_rewrite "mul_rescale"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %rescale = pdl.operation "fixed.rescale"(%product : !pdl.value) {"multiplier" = %m, "shift" = %s, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %rescale
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}
