"""Reading and writing textual IR and the tools' files, with one-line errors.

Parse errors carry `file:line:col`; verification errors name the op and, where the op came
from ONNX, the node (its location). Input files must be regular files of bounded size (a
device such as /dev/zero would be read forever). Output files are written atomically: a
failed compile never leaves a half-written file behind; an output that already exists as a
device or FIFO is written through instead of being replaced, and an output that is one of
the inputs is refused.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import re

from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, ModuleOp, TensorType, UnknownLoc
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region
from xdsl.irdl.dominance import DominanceInfo
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.lexer import Input, Span, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind, StringLiteral

from xnpu.core.budget import over_tensor_budget, over_total_budget
from xnpu.core.errors import XnpuError, first_line
from xnpu.core.files import read_input_file
from xnpu.ir.context import make_context


def parse_error_line(error: ParseError) -> str:
    """`file:line:col: error: message`, as mlir-opt prints it."""
    return f"{error.span.get_location()}: error: {error.msg.strip()}"


# What can come before a string literal's quote: code, or a comment running to the line end.
_CODE_OR_COMMENT = re.compile(r'[^"/]+|//[^\n]*|/')
_ESCAPE = re.compile(r'\\(?:["nt\\]|[0-9A-Fa-f]{2})')


# Brackets may nest this deep in IR text. xDSL's parser, printer and verifier recurse once
# or more per level (an attribute nested ~200 deep ended in a 3,000-line RecursionError
# traceback); real IR nests about ten deep (module, function, op regions, a 4-D literal).
MAX_NESTING = 64
_BRACKET = re.compile(r"->|[\[({<]|[\])}>]")


def _lexical_problem(text: str) -> tuple[int, str] | None:
    """(offset, reason) of the first string literal the lexer could not end, or of the first
    bracket nested deeper than MAX_NESTING; None when there is neither.

    xDSL's lexer matches a string literal with a pattern that nests `(...+)*` and backtracks
    exponentially when the closing quote is missing (an IR file cut short inside a hex blob
    hangs it), so strings are checked here first, by a scan that is linear in the text
    (str.find, not a regular expression, over the long hex blobs of weights). Brackets are
    counted outside strings and comments (`->` closes nothing).
    """
    position = 0
    depth = 0
    while position < len(text):
        if text[position] != '"':
            code = _CODE_OR_COMMENT.match(text, position)
            if text[position] != "/":
                for bracket in _BRACKET.finditer(text, position, code.end()):
                    token = bracket.group()
                    if token in "[({<":
                        depth += 1
                        if depth > MAX_NESTING:
                            return bracket.start(), f"brackets nested more than {MAX_NESTING} deep"
                    elif token != "->":
                        depth -= 1
            position = code.end()
            continue
        start, position = position, position + 1
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end
        while True:
            quote = text.find('"', position, line_end)
            backslash = text.find("\\", position, line_end if quote < 0 else quote)
            if backslash < 0:
                end = line_end if quote < 0 else quote
                breaks = [i for i in (text.find("\v", position, end), text.find("\f", position, end)) if i >= 0]
                if quote < 0 or breaks:
                    return start, "unterminated string literal (it must end on the line it starts)"
                position = quote + 1
                break
            escape = _ESCAPE.match(text, backslash)
            if escape is None:
                return backslash, "invalid escape sequence in string literal"
            position = escape.end()
    return None


def _decode_source(data: str | bytes) -> tuple[str, int | None]:
    """The text, and the offset of the first byte that is not UTF-8 (in the decoded text)."""
    if isinstance(data, str):
        return data, None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as error:
        return data.decode("utf-8", errors="replace"), len(data[: error.start].decode("utf-8", errors="replace"))


class _Utf8Lexer(MLIRLexer):
    """xDSL's lexer, except that a string literal whose escaped bytes decode as UTF-8 is a
    string: xDSL's printer escapes every non-ASCII byte (`loc("conv_é")` prints as
    `loc("conv_\\C3\\A9")`, as MLIR's does), but its lexer makes any non-ASCII escaped literal a
    bytes literal, which no location or string attribute accepts, so such output did not read back."""

    def _lex_string_literal(self, start_pos):
        token = super()._lex_string_literal(start_pos)
        if token.kind is MLIRTokenKind.BYTES_LIT:
            try:
                StringLiteral.from_span(token.span).bytes_contents.decode("utf-8")
            except UnicodeDecodeError:
                return token
            return Token(MLIRTokenKind.STRING_LIT, token.span)
        return token


class IRParser(Parser):
    """xDSL's parser, made total: every bad input is a ParseError with its file:line:col.

    - A constraint an op's builder checks while parsing (an i32 tensor handed to an f32-only
      op), or a literal its attribute cannot hold (1000 in an i8 tensor, 1e40 in an f32 one),
      is reported at that op instead of escaping as an exception that says nowhere.
    - Text that is not UTF-8, string literals the lexer could not end and brackets nested
      more than MAX_NESTING deep are refused before the lexer sees them (its pattern
      backtracks exponentially on an unterminated string; the parser recurses per level).
    - A value used where its definition does not dominate the use (`%1 = op %0` before
      `%0 = ...` in one block) is an error at the using op: xDSL accepts the forward
      reference, and every interpreter would then fail on it.
    - A tensor over the budget (xnpu.core.budget: MAX_TENSOR_BYTES for one, MAX_TOTAL_BYTES for
      a module's splat literals together) is an error where its type is written (dense
      literals) or at the op that has it, before anything is allocated for it; a splat within
      the budget is expanded as bytes, not as a Python list of every element.
    - A string literal whose escaped bytes are UTF-8 text is a string (`_Utf8Lexer`), so a
      non-ASCII name reads back as xDSL printed it.
    """

    def __init__(self, ctx, input: str | bytes, name: str = "<unknown>"):
        text, bad_byte = _decode_source(input)
        if bad_byte is not None:
            raise ParseError(Span(bad_byte, bad_byte + 1, Input(text, name)), "the file is not UTF-8 text")
        bad_string = _lexical_problem(text)
        if bad_string is not None:
            offset, reason = bad_string
            raise ParseError(Span(offset, offset + 1, Input(text, name)), reason)
        super().__init__(ctx, text, name)
        self._parser_state = ParserState(_Utf8Lexer(Input(text, name)))
        self.op_spans: dict[Operation, Span] = {}
        self.splat_bytes = 0  # what this module's splat literals materialise, together
        self._literal_kind = ("other", 0)  # of the dense literal being parsed

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as error:
            raise ParseError(start, joined_lines(error)) from None
        except ValueError as error:  # an attribute refusing a literal (1000 in an i8 tensor)
            raise ParseError(start, first_line(error)) from None
        except OverflowError as error:  # a float literal beyond its type (1e40 in an f32 tensor)
            raise ParseError(start, f"a literal is out of range for its type ({first_line(error)})") from None
        except NotImplementedError as error:  # a type xDSL cannot store (array<i864: ...>)
            raise ParseError(start, f"unsupported: {first_line(error)}") from None
        self.op_spans[op] = start
        return op

    def _parse_dense_literal_type(self):
        # before xDSL expands a splat to every element of the type
        start = self._current_token.span
        type_ = super()._parse_dense_literal_type()
        self._check_literal_type(type_, start)
        return type_

    def _check_literal_type(self, type_, start: Span) -> None:
        """The budget, before anything is allocated for the literal: its type for one tensor,
        and a splat's bytes with the module's other splats for the total."""
        reason = over_tensor_budget(type_.get_shape(), _element_bytes(type_), str(type_.get_element_type()))
        if reason is not None:
            raise ParseError(start, f"dense literal: {reason}")
        kind, hex_bytes = self._literal_kind
        if kind == "scalar" or (kind == "hex" and hex_bytes == _element_bytes(type_)):
            self.splat_bytes += math.prod(type_.get_shape()) * _element_bytes(type_)
            reason = over_total_budget(self.splat_bytes)
            if reason is not None:
                raise ParseError(start, f"splat literals: {reason}")

    def parse_dense_int_or_fp_elements_attr(self, type_):
        start = self._current_token.span
        self._literal_kind = self._dense_literal_kind()
        if type_ is not None:
            self._check_literal_type(type_, start)
        if self._literal_kind[0] == "scalar":
            return self._parse_splat(type_)
        # xDSL accepts a hex blob of any length that holds enough whole elements; the extra
        # bytes would break every later reader of the attribute (the printer included)
        attr = super().parse_dense_int_or_fp_elements_attr(type_)
        needed = math.prod(attr.get_shape()) * attr.get_element_type().compile_time_size
        if len(attr.data.data) != needed:
            raise ParseError(start, f"the dense literal holds {len(attr.data.data)} bytes, its type {attr.type} needs {needed}")
        return attr

    def _dense_literal_kind(self) -> tuple[str, int]:
        """What the `dense<...>` at the current `<` holds: "scalar" (a splat), "hex" (and its
        bytes: one element's is a splat too) or "other" (a list, or nothing)."""
        text = self.lexer.input.content
        position = self._current_token.span.end
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
        if position >= len(text) or text[position] in "[>":
            return "other", 0
        if text[position] == '"':
            end = text.find('"', position + 1)  # the string was checked to end on its line
            return "hex", max(end - position - 3, 0) // 2  # without the quotes and the 0x
        return "scalar", 0

    def _parse_splat(self, type_):
        """`dense<scalar>` of any size as the bytes of one element repeated: xDSL builds a
        Python list of every element (3.2 GB and 20 s for 2^27 floats)."""
        self.parse_punctuation("<", " in dense attribute")
        elements, _ = self._parse_tensor_literal()
        self.parse_punctuation(">", " in dense attribute")
        if type_ is None:
            self.parse_punctuation(":", " in dense attribute")
            type_ = self._parse_dense_literal_type()
        (element,) = elements
        one = DenseIntOrFPElementsAttr.from_list(TensorType(type_.element_type, [1]), [element.to_type(self, type_.element_type)])
        return DenseIntOrFPElementsAttr(type_, BytesAttr(one.data.data * math.prod(type_.get_shape())))

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        module = super().parse_module(allow_implicit_module)
        problem = first_structural_problem(module)
        if problem is not None:
            op, message = problem
            raise ParseError(self.op_spans.get(op, self._current_token.span), verify_error_text(op, message))
        drop_vanishing_names(module)
        return module


def vanishing_name_hint(name: str) -> bool:
    """Whether xDSL empties the name hint `name` when it is set again: it drops one `_<digits>`
    suffix per setting, so `%_1_2` is kept as `_1`, a clone makes it ``, and the next clone
    raises ValueError (an invalid name)."""
    return _SUFFIXES_ONLY.fullmatch(name) is not None


_SUFFIXES_ONLY = re.compile(r"(_\d+)*")


def drop_vanishing_names(root: Operation) -> None:
    """Forget the name hints that would vanish (vanishing_name_hint)."""
    for op in root.walk():
        values = [*op.results, *(arg for region in op.regions for block in region.blocks for arg in block.args)]
        for value in values:
            if value.name_hint is not None and vanishing_name_hint(value.name_hint):
                value.name_hint = None


# xDSL prints the whole failing op into its diagnostic, which unpacks a dense literal into one
# Python object per element (a refused 8192x8192 i1 splat cost 1.2 GB and 11 s to report).
LARGE_LITERAL_ELEMENTS = 1 << 20


def verify_ops(root: Operation) -> None:
    """xDSL's verifier of `root` and everything in it (a VerifyException when an op fails), where
    an op holding a dense literal of more than LARGE_LITERAL_ELEMENTS elements is verified
    first, without printing it."""
    for op in root.walk():
        literals = [*op.properties.values(), *op.attributes.values()]
        if any(isinstance(attr, DenseIntOrFPElementsAttr)
               and math.prod(attr.get_type().get_shape()) > LARGE_LITERAL_ELEMENTS for attr in literals):
            op.verify_()
    root.verify()


def first_structural_problem(root: Operation) -> tuple[Operation, str] | None:
    """What op verifiers do not check, for the whole module: dominance and tensor sizes."""
    return first_dominance_violation(root) or first_oversized_tensor(root)


def first_oversized_tensor(root: Operation) -> tuple[Operation, str] | None:
    """The first op with a result or block argument over the budget for one tensor (xnpu.core.budget)."""
    for op in root.walk():
        values = [*op.results, *(arg for region in op.regions for block in region.blocks for arg in block.args)]
        for value in values:
            if isinstance(value.type, TensorType):
                reason = over_tensor_budget(value.type.get_shape(), _element_bytes(value.type),
                                            str(value.type.get_element_type()))
                if reason is not None:
                    return op, reason
    return None


def _element_bytes(type_) -> int:
    return getattr(type_.get_element_type(), "compile_time_size", 1)


def first_dominance_violation(root: Operation) -> tuple[Operation, str] | None:
    """The first op using a value whose definition does not dominate the use, with why.

    Within a block the definition must come first; across the blocks of a region its block
    must dominate the user's; a value is never visible outside the region it is defined in.
    The body of `builtin.module` is a graph region: its ops may be in any order.
    """
    positions: dict[Block, dict[Operation, int]] = {}
    dominance: dict[Region, DominanceInfo] = {}

    def position(op: Operation) -> int:
        block = op.parent_block()
        if block not in positions:
            positions[block] = {o: i for i, o in enumerate(block.ops)}
        return positions[block][op]

    def ancestor_in(region: Region, op: Operation) -> Operation | None:
        while op is not None and op.parent_region() is not region:
            op = op.parent_op()
        return op

    def block_dominates(a: Block, b: Block, strictly: bool) -> bool:
        if a is b:
            return not strictly
        region = a.parent
        if region not in dominance:
            dominance[region] = DominanceInfo(region)
        return dominance[region].dominates(a, b)

    for user in root.walk():
        for index, operand in enumerate(user.operands):
            if isinstance(operand, OpResult):
                definition = operand.op
                block = definition.parent_block()
                if block is None or block.parent is None:
                    continue
                graph_region = isinstance(block.parent_op(), ModuleOp)
                local = ancestor_in(block.parent, user)
                if local is None:
                    reason = "is used outside the region that defines it"
                elif graph_region or (local.parent_block() is block and position(definition) < position(local)):
                    continue
                elif local.parent_block() is not block and block_dominates(block, local.parent_block(), strictly=True):
                    continue
                else:
                    reason = "is used before its definition"
            elif isinstance(operand, BlockArgument):
                block = operand.block
                local = ancestor_in(block.parent, user) if block.parent is not None else None
                if local is not None and block_dominates(block, local.parent_block(), strictly=False):
                    continue
                reason = "is used outside the block that defines it"
            else:
                continue
            return user, f"operand #{index} {reason}"
    return None


def parse_ir(text: str | bytes, filename: str = "<stdin>", verify: bool = True) -> ModuleOp:
    """Parse (and verify) IR text; an error is one line `file:line:col: error: ...`."""
    try:
        parser = IRParser(make_context(), text, filename)
        module = parser.parse_module()
    except ParseError as error:
        raise XnpuError(parse_error_line(error)) from None
    if verify:
        verify_module(module, filename, parser.op_spans)
    return module


def load_ir(path: str | os.PathLike[str]) -> ModuleOp:
    return parse_ir(read_input_file(path), str(path))


def describe_op(op: Operation) -> str:
    where = "" if isinstance(op.location, UnknownLoc) else f" at {_location_text(op)}"
    return f"'{op.name}'{where}"


def _location_text(op: Operation) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_attribute(op.location)
    return stream.getvalue()


def verify_module(
    module: ModuleOp, filename: str = "<module>", op_spans: dict[Operation, Span] | None = None, line_offset: int = 0
) -> None:
    """An XnpuError `file[:line:col]: error: 'op' at loc(...): message` when `module` does not
    verify (dominance included); the position is the failing op's in the parsed text, when
    `op_spans` (IRParser.op_spans) know it."""
    try:
        verify_ops(module)
        problem = first_structural_problem(module)
        if problem is None:
            return
        failing, message = problem
    except DiagnosticException as error:
        failing, message = failing_op(module, error)
    raise XnpuError(f"{position_of(failing, filename, op_spans, line_offset)}: error: {verify_error_text(failing, message)}")


def position_of(
    op: Operation | None, filename: str, op_spans: dict[Operation, Span] | None = None, line_offset: int = 0
) -> str:
    """`file:line:col` of `op` in the text it was parsed from, or `file` when that is unknown."""
    span = None if op_spans is None or op is None else op_spans.get(op)
    return filename if span is None else str(dataclasses.replace(span, line_offset=line_offset).get_location())


def failing_op(module: Operation, error: Exception) -> tuple[Operation | None, str]:
    """The op whose verifier raised `error`, and the message on one line.

    xDSL's exception does not carry the op, so the op whose own verifier raises the same
    message is looked up again (cheap: only on failure, and without printing the module).
    """
    message = joined_lines(error)
    failing = None
    for op in module.walk():
        try:
            op.verify_()
        except VerifyException as op_error:
            if joined_lines(op_error) == message:
                return op, message
            failing = failing or op
    if failing is None:  # xDSL's own checks of an op's place (a terminator, successors), not verify_
        for op in module.walk():
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException as op_error:
                if joined_lines(op_error) == message:
                    return op, message
    return failing, message


def verify_error_text(failing: Operation | None, message: str) -> str:
    """The verifier's message, prefixed by the op that failed and its location (ONNX node)."""
    if failing is None:
        return message
    prefix = f"{failing.name}: "
    return f"{describe_op(failing)}: {message.removeprefix(prefix)}"


def joined_lines(error: Exception) -> str:
    """The whole message on one line (IRDL's constraint errors span two: what, then why)."""
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__


def print_ir(op: Operation, debuginfo: bool = True, generic: bool = False) -> str:
    """Custom-format (or generic) text of `op`; known locations (ONNX node names) are kept, unknown ones elided."""
    stream = io.StringIO()
    Printer(stream=stream, print_debuginfo=debuginfo, print_generic_format=generic).print_op(op)
    stream.write("\n")
    text = stream.getvalue()
    return text.replace(" loc(unknown)", "") if debuginfo else text


