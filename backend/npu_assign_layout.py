"""npu-assign-layout: the byte order of every tensor in DDR, and the copies between orders.

Each op whose result lives in DDR gets `npu.layout = "NHWC"` or `"NCHW"`, the order of the
bytes of its H x W x C view (an N x K matrix is N x 1 x K, so its row-major order is NHWC):

- program inputs (`fixed.quantize`) arrive from the host in row-major order (NCHW);
- compute units write dense NHWC maps and read maps in either order (their LOADs transpose
  an NCHW map band by band, so the program's input is read as the host wrote it); an int8
  constant read as a tensor (an element-wise operand) is stored in NHWC; interleaves and
  edge pads (strided DMA copies) read and write NHWC maps;
- program outputs (`fixed.dequantize`) leave in row-major order for the host, and host
  segments (`npu.host`) read and write theirs in row-major order too;
- a reshape (or flatten) keeps the row-major order of the elements: it is a view of its
  source's row-major bytes; a reshape to O x 1 x KH x KW read only as convolution kernels
  (seed 002's activation kernels) is such a view too, since those bytes are the DW kernel layout;
- a transpose is a view when its source's bytes already lie in an order of the result
  (NHWC maps transposed to N x H x W x C are read row-major, a row-major map transposed
  (0, 3, 1, 2) is an NHWC map); otherwise its source is copied into its other order first.

Where a reader needs the other order, an `npu.relayout` (a DMA copy through SRAM) is
inserted before the first such reader and shared by the later ones. NCHW and NHWC coincide
for one channel or one pixel, so those never need a copy. Channel padding (SRAM maps hold
C rounded up to the target's channel alignment) is no concern here: DDR is dense, and the
DMA pads and unpads at every LOAD and STORE (npu-tile and lower-npu-to-isa).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, FusedLoc, ModuleOp, StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import (
    LAYOUT,
    fail,
    hwc,
    is_data_constant,
    is_kernel_view,
    only_function,
    resolve_target,
    row_major_layout,
    stored,
)
from xnpu.dialects import fixed, npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.interpreters.function import NAME_ATTR
from xnpu.target.description import TargetDescription


def _dims_text(shape) -> str:
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def argument_name(function: func.FuncOp, index: int, prefix: str, results: bool = False) -> str:
    """The ONNX name of an argument or result (`nn.name`), else `input_N` / `output_N`."""
    attrs = function.res_attrs if results else function.arg_attrs
    if attrs is not None:
        entry = attrs.data[index].data.get(NAME_ATTR)
        if isinstance(entry, StringAttr):
            return entry.data
    return f"{prefix}_{index}"


class LayoutAssigner:
    def __init__(self, function: func.FuncOp, target: TargetDescription):
        self.function = function
        self.target = target
        self.copies: dict[tuple[SSAValue, str], SSAValue] = {}
        self.input_names: set[str] = set()

    def fail(self, op: Operation, message: str):
        return fail(op, message, self.target)

    def annotate(self, op: Operation, layout: str) -> None:
        op.attributes[LAYOUT] = StringAttr(layout)

    # the order an operand is read in ------------------------------------------------------

    def home(self, value: SSAValue, reader: Operation, layout: str) -> None:
        """Give a data constant read by `reader` the layout it wants, if it has none yet."""
        if isinstance(value, BlockArgument) or LAYOUT in value.owner.attributes:
            return
        if not is_data_constant(value):
            raise self.fail(reader, f"operand {value.name_hint or ''} is not an int8 tensor this target holds in memory")
        self.annotate(value.owner, layout)

    def copy(self, value: SSAValue, layout: str, reader: Operation) -> SSAValue:
        """`value` in `layout`: a relayout inserted before its first reader, then shared."""
        key = (value, layout)
        if key not in self.copies:
            relayout = npu.RelayoutOp(value, layout)
            # named after the reader's own node (a fused location's first), not what it fused
            location = reader.location
            relayout.location = location.locations.data[0] if isinstance(location, FusedLoc) else location
            self.annotate(relayout, layout)
            reader.parent_block().insert_op_before(relayout, reader)
            self.copies[key] = relayout.result
        return self.copies[key]

    def nhwc(self, op: Operation, index: int) -> None:
        value = op.operands[index]
        self.home(value, op, "NHWC")
        if not stored(value).nhwc:
            op.operands[index] = self.copy(value, "NHWC", op)

    def unit_operand(self, op: Operation, index: int) -> None:
        """A map a unit reads: in either order, since its LOADs can transpose (the DMA's NCHW
        layout takes bands of rows of every channel plane), so it is never copied for it."""
        self.home(op.operands[index], op, "NHWC")

    def row_major(self, op: Operation, index: int) -> None:
        value = op.operands[index]
        rank = len(shape_of(value))
        self.home(value, op, row_major_layout(rank))
        if not stored(value).row_major:
            op.operands[index] = self.copy(value, row_major_layout(rank), op)

    # ops ----------------------------------------------------------------------------------

    def run(self) -> None:
        for op in list(self.function.body.block.ops):
            if isinstance(op, npu.ConvOp):
                self.conv(op)
            elif isinstance(op, npu.EltwiseOp | npu.PoolOp | npu.TableOp | npu.ClampOp):
                for index in range(len(op.operands)):
                    self.unit_operand(op, index)
                self.annotate(op, "NHWC")
            elif isinstance(op, npu.ConcatOp):
                self.concat(op)
            elif isinstance(op, npu.InterleaveOp | npu.PadOp):
                self.strided_copy(op)
            elif isinstance(op, npu.ReshapeOp):
                self.reshape(op)
            elif isinstance(op, npu.TransposeOp):
                self.transpose(op)
            elif isinstance(op, npu.RelayoutOp):
                self.annotate(op, op.layout.data)
            elif isinstance(op, fixed.QuantizeOp):
                self.quantize(op)
            elif isinstance(op, fixed.DequantizeOp):
                self.dequantize(op)
            elif isinstance(op, npu.HostOp):
                self.host(op)
            elif isinstance(op, func.ReturnOp):
                for index, operand in enumerate(op.operands):
                    if not isinstance(operand.owner, fixed.DequantizeOp | npu.HostOp):
                        raise self.fail(op, f"result {index} is not produced by fixed.dequantize or a host segment")
            elif not isinstance(op, fixed.ConstantOp):
                raise self.fail(op, f"'{op.name}' has no lowering to instructions")
        for argument in self.function.body.block.args:
            if not any(isinstance(use.operation, fixed.QuantizeOp) for use in argument.uses):
                continue
            if any(isinstance(use.operation, npu.HostOp) for use in argument.uses):
                raise self.fail(self.function, f"input '{argument_name(self.function, argument.index, 'input')}' is "
                                               "read both quantized and as it is; the io table holds it once")

    def quantize(self, op: fixed.QuantizeOp) -> None:
        if not isinstance(op.input, BlockArgument):
            raise self.fail(op, "a quantize inside the graph has no instruction (only program inputs enter as float)")
        if fixed.width_of(op.result) != 8:
            raise self.fail(op, "program inputs must be quantized to int8")
        name = argument_name(self.function, op.input.index, "input")
        if name in self.input_names:
            raise self.fail(op, f"input '{name}' is quantized twice; the io table holds one scale per input")
        self.input_names.add(name)
        shape = shape_of(op.result)
        hwc(shape, op)
        self.annotate(op, row_major_layout(len(shape)))  # as the host writes it

    def dequantize(self, op: fixed.DequantizeOp) -> None:
        if not all(isinstance(use.operation, func.ReturnOp) for use in op.result.uses):
            raise self.fail(op, "a dequantize inside the graph has no instruction (only program outputs leave int8)")
        if len(op.scales()) != 1:
            raise self.fail(op, "a per-channel output scale cannot be described in the io table")
        self.row_major(op, 0)  # as the host reads it

    def host(self, op: npu.HostOp) -> None:
        """The host reads and writes its tensors in row-major order, as it does the program's
        (a program input it reads as it is, or another segment's result, already lies so)."""
        for index, value in enumerate(op.operands):
            if not isinstance(value, BlockArgument) and not isinstance(value.owner, npu.HostOp):
                self.row_major(op, index)
        for value in (*op.operands, *op.results):
            if any(d < 0 for d in shape_of(value)):
                raise self.fail(op, f"a tensor of shape {_dims_text(shape_of(value))} depends on the data; the "
                                    "accelerator's memory plan needs static shapes (run the model at the fixed level)")
        op.attributes[LAYOUT] = ArrayAttr([StringAttr(row_major_layout(len(shape_of(v)))) for v in op.results])

    def conv(self, op: npu.ConvOp) -> None:
        self.unit_operand(op, 0)
        weights = op.weight.owner
        if not (isinstance(weights, fixed.ConstantOp) or is_kernel_view(weights)):
            raise self.fail(op, "convolution weights must be constants or an activation reshaped to kernels")
        if op.bias is not None and not isinstance(op.bias.owner, fixed.ConstantOp):
            raise self.fail(op, "convolution biases must be constants")
        self.annotate(op, "NHWC")

    def concat(self, op: npu.ConcatOp) -> None:
        shape = shape_of(op.result)
        if len(shape) != 4 or op.axis.value.data % 4 != 1:
            raise self.fail(op, "only channel concatenation of NCHW maps has a DMA pattern")
        for index in range(len(op.inputs)):
            self.nhwc(op, index)
        self.annotate(op, "NHWC")

    def strided_copy(self, op: npu.InterleaveOp | npu.PadOp) -> None:
        """Phases interleaved, or a map edge-padded: NHWC maps in and out (the DMA steps over
        pixels and rows of NHWC, whose channels stay together)."""
        for index in range(len(op.operands)):
            self.nhwc(op, index)
        self.annotate(op, "NHWC")

    def reshape(self, op: npu.ReshapeOp) -> None:
        """A view of the source's row-major bytes (for kernels: their DW / OHWI layout)."""
        self.row_major(op, 0)
        shape = shape_of(op.result)
        if not is_kernel_view(op):
            hwc(shape, op)
        self.annotate(op, row_major_layout(len(shape)))

    def transpose(self, op: npu.TransposeOp) -> None:
        """A view when the bytes (as they are, or after one copy) lie in an order of the result."""
        perm = ints(op.perm)
        in_shape, out_shape = shape_of(op.input), shape_of(op.result)
        hwc(out_shape, op)

        def storage_order(layout: str) -> list[int]:
            axes = [0, 2, 3, 1] if len(in_shape) == 4 and layout == "NHWC" else list(range(len(in_shape)))
            return [a for a in axes if in_shape[a] != 1]

        row_major_order = [perm[i] for i in range(len(out_shape)) if out_shape[i] != 1]
        nhwc_order = [perm[i] for i in (0, 2, 3, 1) if out_shape[i] != 1] if len(out_shape) == 4 else None
        self.home(op.input, op, row_major_layout(len(in_shape)))
        source = op.input
        for make in (lambda: None, lambda: self.row_major(op, 0), lambda: self.nhwc(op, 0)):
            op.operands[0] = source
            make()
            order = storage_order(stored(op.input).layout)
            if order == row_major_order:
                self.annotate(op, row_major_layout(len(out_shape)))
                return
            if order == nhwc_order:
                self.annotate(op, "NHWC")
                return
        raise self.fail(op, f"transpose {list(perm)} of {list(in_shape)} is neither the NHWC nor the NCHW order "
                            "of its input")


@dataclass(frozen=True)
class NpuAssignLayoutPass(ModulePass):
    """Annotate every tensor's DDR byte order (npu.layout) and insert npu.relayout copies where readers need another."""

    name = "npu-assign-layout"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        LayoutAssigner(only_function(op, self.name), target).run()
