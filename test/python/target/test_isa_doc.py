"""docs/isa.md and xnpu.target.encoding describe the same instruction words.

The field tables are parsed out of the markdown and compared with FORMATS; the opcode table
with OPCODES. Either side changing alone fails here.
"""

import re
from pathlib import Path

from xnpu.target.encoding import FORMATS, OPCODES, WORD_BITS

ISA_DOC = Path(__file__).resolve().parents[3] / "docs" / "isa.md"


def _tables_after(text: str, heading: re.Pattern) -> dict[str, list[list[str]]]:
    """Heading name -> rows (cells) of the first markdown table after that heading."""
    tables: dict[str, list[list[str]]] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = heading.match(line)
        if not match:
            continue
        rows: list[list[str]] = []
        for row in lines[index + 1 :]:
            if row.startswith("#"):
                break
            if row.startswith("|"):
                rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
            elif rows:
                break
        tables[match.group(1)] = rows[2:]  # drop the header and the |---| line
    return tables


def doc_field_tables() -> dict[str, list[tuple[str, int, int, bool]]]:
    tables = _tables_after(ISA_DOC.read_text(), re.compile(r"^### Format `(\w+)`"))
    parsed = {}
    for name, rows in tables.items():
        parsed[name] = [
            (row[0], int(row[1]), int(row[2]), {"yes": True, "no": False}[row[3]]) for row in rows
        ]
    return parsed


def test_every_format_is_documented_field_by_field():
    documented = doc_field_tables()
    assert sorted(documented) == sorted(FORMATS)
    for name, fmt in FORMATS.items():
        fields = [(f"`{f.name}`", f.offset, f.width, f.signed) for f in sorted(fmt.fields, key=lambda f: f.offset)]
        doc_fields = [row for row in documented[name] if row[0] != "(reserved)"]
        assert doc_fields == fields, f"docs/isa.md format {name} disagrees with encoding.FORMATS"


def test_documented_tables_cover_every_bit_once():
    for name, rows in doc_field_tables().items():
        position = 0
        for field, offset, width, signed in rows:
            assert offset == position, f"{name}: {field} starts at {offset}, expected {position}"
            if field == "(reserved)":
                assert not signed
            position = offset + width
        assert position == WORD_BITS, f"{name}: the table covers {position} of {WORD_BITS} bits"


def test_opcode_table_matches_code():
    text = ISA_DOC.read_text()
    rows = re.findall(r"^\| `0x([0-9a-f]{2})` \| (\w+) \| `(\w+)` \|", text, re.MULTILINE)
    documented = {mnemonic: (int(code, 16), fmt) for code, mnemonic, fmt in rows}
    assert documented == OPCODES
