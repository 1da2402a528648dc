// Clamps, tables and int8 requantizations. After a unit's result they run in its output
// stage (the relu flag, or a CLAMP / TABLE in SRAM before the result is stored); on their
// own they are a CLAMP or TABLE over the whole map. Every unit saturates its result to the
// target's range (R3), so a clamp to that range is nothing at all.

// a clamp to the saturation range every unit applies anyway, after an op: removed, its
// producer's location naming it too (profiles attribute its node)
pdl.pattern @saturation_clamp_after_op : benefit(5) {
  %producer = pdl.operation
  %x = pdl.result 0 of %producer
  %t = pdl.type
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_saturation"(%clamp : !pdl.operation)
  pdl.apply_native_constraint "names_nodes"(%producer : !pdl.operation)
  pdl.rewrite %clamp {
    %named = pdl.apply_native_rewrite "naming_the_root"(%producer : !pdl.operation) : !pdl.operation
    pdl.replace %producer with %named
    %y = pdl.result 0 of %named
    pdl.replace %clamp with (%y : !pdl.value)
  }
}

// a clamp to the saturation range of a program input: removed
pdl.pattern @saturation_clamp : benefit(4) {
  %x = pdl.operand
  %t = pdl.type
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_saturation"(%clamp : !pdl.operation)
  pdl.rewrite %clamp {
    pdl.replace %clamp with (%x : !pdl.value)
  }
}

// relu ([0, smax]) after a CONV or ELTWISE: the unit's relu flag
pdl.pattern @relu_flag : benefit(3) {
  %unit = pdl.operation
  %y = pdl.result 0 of %unit
  %t = pdl.type
  %clamp = pdl.operation "fixed.clamp"(%y : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_relu"(%clamp : !pdl.operation)
  pdl.apply_native_constraint "flags_relu"(%unit : !pdl.operation)
  pdl.rewrite %clamp {
    %fused = pdl.apply_native_rewrite "with_relu"(%unit : !pdl.operation) : !pdl.operation
    pdl.replace %unit with %fused
    %z = pdl.result 0 of %fused
    pdl.replace %clamp with (%z : !pdl.value)
  }
}

// any other clamp after a unit's result: a CLAMP in SRAM (or its exact TABLE without a clamp unit)
pdl.pattern @clamp_epilogue : benefit(2) {
  %unit = pdl.operation
  %y = pdl.result 0 of %unit
  %t = pdl.type
  %clamp = pdl.operation "fixed.clamp"(%y : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "takes_epilogue"(%unit : !pdl.operation)
  pdl.apply_native_constraint "clamp_or_table_unit"(%clamp : !pdl.operation)
  pdl.rewrite %clamp {
    %fused = pdl.apply_native_rewrite "with_clamp"(%unit, %clamp : !pdl.operation, !pdl.operation) : !pdl.operation
    pdl.replace %unit with %fused
    %z = pdl.result 0 of %fused
    pdl.replace %clamp with (%z : !pdl.value)
  }
}

// a table after a unit's result: a TABLE in SRAM before the store
pdl.pattern @table_epilogue : benefit(2) {
  %unit = pdl.operation
  %y = pdl.result 0 of %unit
  %t = pdl.type
  %table = pdl.operation "fixed.table"(%y : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "takes_epilogue"(%unit : !pdl.operation)
  %unit_name = pdl.attribute = "table"
  pdl.apply_native_constraint "has_unit"(%unit_name : !pdl.attribute)
  pdl.rewrite %table {
    %fused = pdl.apply_native_rewrite "with_table"(%unit, %table : !pdl.operation, !pdl.operation) : !pdl.operation
    pdl.replace %unit with %fused
    %z = pdl.result 0 of %fused
    pdl.replace %table with (%z : !pdl.value)
  }
}

// a clamp on its own -> CLAMP
pdl.pattern @clamp : benefit(1) {
  %x = pdl.operand
  %lo = pdl.attribute
  %hi = pdl.attribute
  %t = pdl.type
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) {"min" = %lo, "max" = %hi} -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "input_selected"(%x : !pdl.value)
  %unit = pdl.attribute = "clamp"
  pdl.apply_native_constraint "has_unit"(%unit : !pdl.attribute)
  pdl.rewrite %clamp {
    %y = pdl.operation "npu.clamp"(%x : !pdl.value) {"min" = %lo, "max" = %hi} -> (%t : !pdl.type)
    pdl.replace %clamp with %y
  }
}

// a clamp on its own on a target without a clamp unit -> its exact TABLE
pdl.pattern @clamp_as_table : benefit(0) {
  %x = pdl.operand
  %t = pdl.type
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "input_selected"(%x : !pdl.value)
  %unit = pdl.attribute = "table"
  pdl.apply_native_constraint "has_unit"(%unit : !pdl.attribute)
  pdl.rewrite %clamp {
    %entries = pdl.apply_native_rewrite "clamp_table"(%clamp : !pdl.operation) : !pdl.attribute
    %y = pdl.operation "npu.table"(%x : !pdl.value) {"table" = %entries} -> (%t : !pdl.type)
    pdl.replace %clamp with %y
  }
}

// a table on its own -> TABLE
pdl.pattern @table : benefit(1) {
  %x = pdl.operand
  %entries = pdl.attribute
  %t = pdl.type
  %table = pdl.operation "fixed.table"(%x : !pdl.value) {"table" = %entries} -> (%t : !pdl.type)
  pdl.apply_native_constraint "input_selected"(%x : !pdl.value)
  %unit = pdl.attribute = "table"
  pdl.apply_native_constraint "has_unit"(%unit : !pdl.attribute)
  pdl.rewrite %table {
    %y = pdl.operation "npu.table"(%x : !pdl.value) {"table" = %entries} -> (%t : !pdl.type)
    pdl.replace %table with %y
  }
}

// an int8 -> int8 rescale (a change of scale between two layers): R9 on every code is a TABLE
pdl.pattern @requantize_as_table : benefit(1) {
  %x = pdl.operand
  %t = pdl.type
  %rescale = pdl.operation "fixed.rescale"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "is_i8"(%x : !pdl.value)
  pdl.apply_native_constraint "is_i8"(%rescale : !pdl.operation)
  pdl.apply_native_constraint "one_pair"(%rescale : !pdl.operation)
  %unit = pdl.attribute = "table"
  pdl.apply_native_constraint "has_unit"(%unit : !pdl.attribute)
  pdl.rewrite %rescale {
    %entries = pdl.apply_native_rewrite "requantize_table"(%rescale : !pdl.operation) : !pdl.attribute
    %y = pdl.operation "npu.table"(%x : !pdl.value) {"table" = %entries} -> (%t : !pdl.type)
    pdl.replace %rescale with %y
  }
}
