"""Parsed pattern files kept on disk between runs, the way Python keeps bytecode, as data only.

Parsing a pattern file with xDSL's parser costs more than most passes, and every compile, and
every `xnpu-opt` run, meets the same files. The checked parse is written as JSON to
`__pycache__/<file>.patterns.json` next to the pattern file (under PYTHONPYCACHEPREFIX when
set, as for bytecode), or, where that directory cannot be written, to the user's cache
directory ($XDG_CACHE_HOME/xnpu/patterns or ~/.cache/xnpu/patterns). An entry holds for the
exact text of the file (its sha256), this xDSL and this FORMAT, and carries the sha256 of its
own payload. Entries are read always; where sys.dont_write_bytecode (-B,
PYTHONDONTWRITEBYTECODE) keeps bytecode out of the source tree, they are written to the user's
cache directory only: without one every process parses every pattern file it meets again
(~1.3 s of a compile).

Reading an entry executes nothing from it. The payload is JSON (no pickle: an entry planted
beside a pattern directory, or in a shared cache directory, could otherwise run code in
every compile): each op of a pattern as its name, operand numbers, result types, properties,
attributes and regions; strings, integers, floats, integer arrays and PDL types as plain values,
any other attribute or type as its MLIR text, read back by xDSL's attribute parser. Ops are
looked up in a context of the `builtin` and `pdl` dialects only.
An entry is read only when it is a regular file owned by this user, by root or by the owner
of the pattern file, and writable by nobody else.

A cache never decides anything: an entry that cannot be read, is not trusted, does not hold
for the file or does not decode, and an entry that cannot be written, all mean the file is
parsed, silently.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import json
import os
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import xdsl
from xdsl.context import Context
from xdsl.dialects import pdl
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer

from xnpu.core.errors import XnpuError
from xnpu.core.files import write_atomically

FORMAT = 2  # raise when the payload's shape changes
NAME_SUFFIX = "patterns.json"
MAX_ENTRY_BYTES = 64 << 20  # far above any pattern file's parse; a bigger file is not read

# (name, benefit, root op name or None, summary, the pdl.pattern op): what pdl/patterns.py keeps of a pattern
Entry = tuple[str, int, str | None, str, Operation]
# the same read from an entry, the op built when first asked for (None if it cannot be: the file is then parsed)
StoredEntry = tuple[str, int, str | None, str, Callable[[], Operation | None]]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def _versions() -> str:
    return f"xnpu-patterns {FORMAT} xdsl {_xdsl_version()}"


def _xdsl_version() -> str:
    """The installed xDSL's version, from the name of its one dist-info folder beside the
    package (what importlib.metadata reads, without its ~60 ms of imports in every process that
    loads patterns); xdsl.__version__ where there is not exactly one (an editable xDSL)."""
    folders = list(Path(xdsl.__file__).resolve().parent.parent.glob("xdsl-*.dist-info"))
    if len(folders) == 1:
        return folders[0].name[len("xdsl-") : -len(".dist-info")]
    return str(xdsl.__version__)


def _holds_for(text: str) -> bytes:
    """How an entry's first line starts when it holds for `text` here."""
    return f"{_versions()} {_digest(text.encode())} ".encode()


def _header(text: str, payload: bytes) -> bytes:
    """The first line of an entry: what it holds for, and the digest of the payload after it."""
    return _holds_for(text) + f"{_digest(payload)}\n".encode()


def _user_cache_dir() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative path is to be ignored
        try:
            base = Path.home() / ".cache"
        except RuntimeError:  # no home directory to be found
            return None
    return Path(base) / "xnpu" / "patterns"


def cache_paths(path: Path, beside_sources: bool = True) -> list[Path]:
    """Where the entry of pattern file `path` may be, in the order they are tried; without
    `beside_sources`, the user's cache directory only."""
    path = path.resolve()  # one entry per file, however it is named
    name = f"{path.name}.{NAME_SUFFIX}"
    places = []
    if beside_sources and sys.implementation.cache_tag is not None:  # where this Python keeps bytecode
        try:
            places.append(Path(importlib.util.cache_from_source(str(path))).parent / name)
        except ValueError:
            pass
    user = _user_cache_dir()
    if user is not None:
        where = hashlib.sha256(str(path).encode()).hexdigest()[:16]
        places.append(user / f"{where}-{name}")
    return places


def _trusted(status: os.stat_result, source_owner: int | None) -> bool:
    """A regular file owned by this user, root or the pattern file's owner, writable by no one else."""
    owners = {os.getuid(), 0} | ({source_owner} if source_owner is not None else set())
    return (stat.S_ISREG(status.st_mode) and status.st_uid in owners
            and not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and status.st_size <= MAX_ENTRY_BYTES)


def _read_trusted(place: Path, source_owner: int | None) -> bytes | None:
    try:
        with open(place, "rb") as handle:
            if not _trusted(os.fstat(handle.fileno()), source_owner):  # the file opened, not the name
                return None
            return handle.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None


def load(path: Path, text: str, context: Context) -> list[StoredEntry] | None:
    """The patterns stored for `path` with this `text`, or None. Each op is built (in `context`)
    when first asked for: a compile tries a few patterns of each file it meets, and building
    every op of 17 files took longer than unpickling them did."""
    try:
        source_owner = os.stat(path).st_uid
    except OSError:
        source_owner = None
    for place in cache_paths(path):
        data = _read_trusted(place, source_owner)
        if data is None or not data.startswith(_holds_for(text)):
            continue
        end = data.find(b"\n")
        payload = data[end + 1:]
        if data[: end + 1] != _header(text, payload):
            continue
        try:
            return decode(json.loads(payload), context)
        except Exception:  # damaged, or not what this version writes: as if there were none
            continue
    return None


def store(path: Path, text: str, entries: Sequence[Entry]) -> None:
    """Keep `entries` (the checked parse of `text`) for `path` in the first place that can be written."""
    try:
        payload = json.dumps(encode(entries), separators=(",", ":")).encode()
    except Exception:  # an attribute xDSL cannot print: the file is parsed each run
        return
    data = _header(text, payload) + payload
    # with -B nothing is written beside the sources: an entry goes to the user's cache only
    for place in cache_paths(path, beside_sources=not sys.dont_write_bytecode):
        try:
            _write_atomically(place, data)
            return
        except OSError:
            continue


def _write_atomically(place: Path, data: bytes) -> None:
    """A reader never sees half an entry; the entry is readable by all, writable by its owner only."""
    place.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_atomically(place, data)
    except XnpuError as error:
        raise OSError(str(error)) from None
    os.chmod(place, 0o644)


# --------------------------------------------------------------------------------------
# Ops <-> JSON
# --------------------------------------------------------------------------------------


def encode(entries: Sequence[Entry]) -> dict:
    """{"attributes": [...], "patterns": [...]}: each distinct attribute or type once (`_encode_attribute`),
    each pattern as [name, benefit, root, summary, op]; an op as [name, operand numbers,
    result types, properties, attributes, regions, result names] (attributes and types by
    their index in the table), a region a list of blocks [argument types, ops, argument names]. Values are numbered per pattern in
    the order `decode` creates them (an op's results, then its regions' block arguments and
    ops, depth first), so a use may come before its definition, as in a PDL pattern's graph region."""
    table: dict[Attribute, int] = {}

    def index(attribute: Attribute) -> int:
        if attribute not in table:
            table[attribute] = len(table)
        return table[attribute]

    patterns = []
    for name, benefit, root, summary, pattern in entries:
        numbers: dict[SSAValue, int] = {}
        _number(pattern, numbers)
        patterns.append([name, benefit, root, summary, _encode_op(pattern, numbers, index)])
    return {"attributes": [_encode_attribute(attribute) for attribute in table], "patterns": patterns}


def _number(op: Operation, numbers: dict[SSAValue, int]) -> None:
    for result in op.results:
        numbers[result] = len(numbers)
    for region in op.regions:
        for block in region.blocks:
            for argument in block.args:
                numbers[argument] = len(numbers)
            for inner in block.ops:
                _number(inner, numbers)


def _encode_op(op: Operation, numbers: dict[SSAValue, int], index: Callable[[Attribute], int]) -> list:
    return [
        op.name,
        [numbers[operand] for operand in op.operands],
        [index(result.type) for result in op.results],
        {name: index(value) for name, value in op.properties.items()},
        {name: index(value) for name, value in op.attributes.items()},
        [[[[index(argument.type) for argument in block.args], [_encode_op(inner, numbers, index) for inner in block.ops],
           [argument.name_hint for argument in block.args]]
          for block in region.blocks] for region in op.regions],
        [result.name_hint for result in op.results],
    ]


_FLOAT_TYPES = {"f16": Float16Type, "f32": Float32Type, "f64": Float64Type}
_PDL_TYPES = {"value": pdl.ValueType, "attribute": pdl.AttributeType, "operation": pdl.OperationType, "type": pdl.TypeType}


def _encode_attribute(attribute: Attribute) -> list:
    """The kinds pattern files hold as data built without a parser; anything else as its MLIR text."""
    if isinstance(attribute, StringAttr):
        return ["string", attribute.data]
    if isinstance(attribute, IntegerType):
        return ["integer_type", attribute.width.data, attribute.signedness.data.value]
    if isinstance(attribute, IntegerAttr) and isinstance(attribute.type, IntegerType):
        return ["integer", attribute.value.data, _encode_attribute(attribute.type)]
    if isinstance(attribute, FloatAttr) and type(attribute.type) in _FLOAT_TYPES.values():
        return ["float", attribute.value.data.hex(), _encode_attribute(attribute.type)]
    if type(attribute) in _FLOAT_TYPES.values():
        return ["float_type", attribute.name]
    if isinstance(attribute, DenseArrayBase) and isinstance(attribute.elt_type, IntegerType):
        return ["dense_array", _encode_attribute(attribute.elt_type), list(attribute.get_values())]
    if isinstance(attribute, ArrayAttr):
        return ["array", [_encode_attribute(item) for item in attribute.data]]
    if isinstance(attribute, pdl.RangeType):
        return ["pdl_range", _encode_attribute(attribute.element_type)]
    for name, kind in _PDL_TYPES.items():
        if type(attribute) is kind:
            return ["pdl", name]
    return ["text", _attribute_text(attribute)]


def _attribute_text(attribute: Attribute) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_attribute(attribute)
    return stream.getvalue()


def _decode_attribute(data: object, context: Context) -> Attribute:
    kind, *fields = data  # type: ignore[misc]
    if kind == "string" and isinstance(fields[0], str):
        return StringAttr(fields[0])
    if kind == "integer_type":
        width, signedness = fields
        return IntegerType(width, Signedness(signedness))
    if kind == "integer":
        value, type_ = fields
        return IntegerAttr(value, _decode_attribute(type_, context))
    if kind == "float":
        value, type_ = fields
        return FloatAttr(float.fromhex(value), _decode_attribute(type_, context))
    if kind == "float_type":
        return _FLOAT_TYPES[fields[0]]()
    if kind == "dense_array":
        type_, values = fields
        return DenseArrayBase.from_list(_decode_attribute(type_, context), values)
    if kind == "array":
        return ArrayAttr([_decode_attribute(item, context) for item in fields[0]])
    if kind == "pdl_range":
        return pdl.RangeType(_decode_attribute(fields[0], context))
    if kind == "pdl":
        return _PDL_TYPES[fields[0]]()
    if kind == "text" and isinstance(fields[0], str):
        parser = Parser(context, fields[0])
        attribute = parser.parse_attribute()
        if parser.pos != len(fields[0]):
            raise ValueError(f"more than one attribute in {fields[0]!r}")
        return attribute
    raise ValueError(f"not an attribute: {data!r}")


# an attribute's JSON (its repr) -> the attribute, for every entry a process reads (attributes are immutable)
_ATTRIBUTES: dict[str, Attribute] = {}


def decode(encoded: object, context: Context) -> list[StoredEntry]:
    """The entries of `encode`'s output, each op built from `context`'s op classes when first
    asked for; data of any other shape raises here, or gives None for that op (the caller then
    parses the file). The ops are not verified again: an entry is written from a checked parse,
    its payload digest catches damage, and only its owner (this user, root or the pattern
    file's) can have written it."""
    if not isinstance(encoded, dict) or not isinstance(encoded.get("patterns"), list):
        raise ValueError("an entry is {attributes, patterns}")
    attributes = []
    for item in encoded["attributes"]:
        key = repr(item)
        if key not in _ATTRIBUTES:
            _ATTRIBUTES[key] = _decode_attribute(item, context)
        attributes.append(_ATTRIBUTES[key])
    entries = []
    for name, benefit, root, summary, op_data in encoded["patterns"]:
        if not (isinstance(name, str) and type(benefit) is int and isinstance(root, str | None) and isinstance(summary, str)):
            raise ValueError("a pattern's name, benefit, root and summary")
        _check_op(op_data, context, len(attributes), [0], [])
        entries.append((name, benefit, root, summary, _OpBuilder(op_data, context, attributes)))
    return entries


def _check_op(data: object, context: Context, attributes: int, values: list[int], operands: list[int]) -> None:
    """Raise unless `data` has the shape `_encode_op` writes, with ops of `context`, attributes
    of the table and operands naming values of the pattern: what `_OpBuilder` meets is sound."""
    if not (isinstance(data, list) and len(data) == 7):
        raise ValueError("an op is [name, operands, result types, properties, attributes, regions, names]")
    name, op_operands, result_types, properties, op_attributes, regions, names = data
    if not isinstance(name, str) or context.get_optional_op(name) is None:
        raise ValueError(f"{name!r} is not an op of the pattern context")
    indices = [*result_types, *_dict_values(properties), *_dict_values(op_attributes)]
    if not (_numbers(op_operands) and _numbers(indices) and all(i < attributes for i in indices)
            and isinstance(regions, list) and isinstance(names, list) and len(names) == len(result_types)):
        raise ValueError(f"'{name}': operands, types or attributes")
    values[0] += len(result_types)
    operands.extend(op_operands)
    for blocks in regions:
        for block in blocks if isinstance(blocks, list) else [None]:
            if not (isinstance(block, list) and len(block) == 3 and _numbers(block[0]) and isinstance(block[1], list)
                    and all(i < attributes for i in block[0]) and len(block[2]) == len(block[0])):
                raise ValueError(f"'{name}': a block is [argument types, ops, argument names]")
            values[0] += len(block[0])
            for inner in block[1]:
                _check_op(inner, context, attributes, values, operands)
    if name == "pdl.pattern" and not all(n < values[0] for n in operands):  # the outermost op: every value is known
        raise ValueError("an operand names no value of the pattern")


def _numbers(items: object) -> bool:
    return isinstance(items, list) and all(type(i) is int and i >= 0 for i in items)


def _dict_values(items: object) -> list:
    if not (isinstance(items, dict) and all(isinstance(key, str) for key in items)):
        raise ValueError("properties and attributes are {name: attribute}")
    return list(items.values())


class _OpBuilder:
    """A pattern's op from its JSON, built once, on the first call; None when the data is damaged."""

    def __init__(self, data: object, context: Context, attributes: list[Attribute]):
        self.data, self.context, self.attributes = data, context, attributes
        self.op: Operation | None = None

    def __call__(self) -> Operation | None:
        if self.op is None and self.data is not None:
            values: list[SSAValue] = []
            uses: list[tuple[Operation, list]] = []
            try:
                op = _decode_op(self.data, self.context, self.attributes, values, uses)
                for user, numbers in uses:  # uses before their definition
                    user.operands = [values[n] for n in numbers]
                op.verify()  # an op short of a property it needs (a constraint's name) is damage too
                self.op = op
            except Exception:
                pass
            self.data = None
        return self.op


def _name(values: Sequence[SSAValue], names: list) -> None:
    """The names the pattern file gave its values (`%clamp`), kept for what prints them."""
    if len(names) != len(values):
        raise ValueError("one name (or null) per value")
    for value, name in zip(values, names):
        if name is not None:
            value.name_hint = name


def _decode_op(data: object, context: Context, attributes: list[Attribute], values: list[SSAValue],
               uses: list[tuple[Operation, list]]) -> Operation:
    name, operands, result_types, properties, op_attributes, regions, names = data  # type: ignore[misc]
    op_type = context.get_optional_op(name) if isinstance(name, str) else None
    if op_type is None:
        raise ValueError(f"{name!r} is not an op of the pattern context")
    if not all(type(n) is int and n >= 0 for n in operands):
        raise ValueError("operands are value numbers")
    defined = all(n < len(values) for n in operands)
    op = op_type.create(
        operands=[values[n] for n in operands] if defined else (),
        result_types=[attributes[i] for i in result_types],
        properties={key: attributes[i] for key, i in properties.items()},
        attributes={key: attributes[i] for key, i in op_attributes.items()},
        regions=[Region() for _ in regions],
    )
    _name(op.results, names)
    values.extend(op.results)
    if not defined:
        uses.append((op, operands))
    for region, blocks in zip(op.regions, regions):
        for argument_types, ops, argument_names in blocks:
            block = Block(arg_types=[attributes[i] for i in argument_types])
            region.add_block(block)
            _name(block.args, argument_names)
            values.extend(block.args)
            for inner in ops:
                block.add_op(_decode_op(inner, context, attributes, values, uses))
    return op
