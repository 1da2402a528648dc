// Pointwise float functions with no integer form (sigmoid, tanh, hard_swish, hard_sigmoid: the
// TABLE_FUNCTIONS of natives.py) are a 256-entry table of the int8 codes (R15): an int8
// input has only 256 values. Numbers: natives.py (table_entries).

// f(x) for every int8 code of x: quantize, one table lookup, dequantize
pdl.pattern @table : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %root = pdl.operation (%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_table_function"(%root : !pdl.operation)
  pdl.rewrite %root {
    %xs, %xt = pdl.apply_native_rewrite "int8_codes"(%x : !pdl.value) : !pdl.attribute, !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %xs} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %out = pdl.result 0 of %root
    %ys, %yt = pdl.apply_native_rewrite "int8_codes"(%out : !pdl.value) : !pdl.attribute, !pdl.type
    %entries = pdl.apply_native_rewrite "table_entries"(%root : !pdl.operation) : !pdl.attribute
    %table = pdl.operation "fixed.table"(%q : !pdl.value) {"table" = %entries, "scale" = %ys} -> (%yt : !pdl.type)
    %y = pdl.result 0 of %table
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %ys} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}
