"""The package's shape (docs/architecture.md): layers without cycles, enforced here so that a new
cycle or an upward import fails the suite.

- The layering contract in pyproject.toml ([tool.importlinter]) holds: import-linter, a
  maintained contract checker, reads every import of every module, function-local ones too.
- No import cycle between modules, counting function-local imports (imports under
  `if TYPE_CHECKING:` are not made at run time and do not count).
- Function-local imports only where start-up needs them: at most 40 in the package.
- No module over 800 lines outside dialects/ (whose op definitions are long by nature): a module
  that grows past it holds more than one concern and is split by concern.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from models import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
MAX_FUNCTION_LOCAL_IMPORTS = 40
MAX_MODULE_LINES = 800
PACKAGE_DIRS = ("core", "semantics", "target", "dialects", "ir", "interpreters", "pdl", "frontend", "transforms",
                "lowering", "backend", "driver", "tools")


def package_files() -> list[Path]:
    return [ROOT / "__init__.py"] + sorted(p for d in PACKAGE_DIRS for p in (ROOT / d).rglob("*.py"))


def test_the_layering_contract_holds():
    if not LINT_IMPORTS.exists():
        pytest.skip("import-linter is not installed (the test extras: pip install -e '.[test]')")
    result = subprocess.run([str(LINT_IMPORTS), str(ROOT / "pyproject.toml")], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "Contracts: 1 kept, 0 broken." in result.stdout


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_between_modules():
    graph = grimp.build_graph("xnpu", cache_dir=None, exclude_type_checking_imports=True)
    edges = {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def function_local_imports(path: Path) -> list[str]:
    found = []
    for function in ast.walk(ast.parse(path.read_text())):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xnpu"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                elif isinstance(node, ast.Import) and any(alias.name.startswith("xnpu") for alias in node.names):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_function_local_imports_only_where_start_up_needs_them():
    found = sorted({site for path in package_files() for site in function_local_imports(path)})
    assert len(found) <= MAX_FUNCTION_LOCAL_IMPORTS, found


def test_no_module_outside_the_dialects_holds_more_than_800_lines():
    lines = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines()) for path in package_files()}
    too_long = {path: n for path, n in lines.items() if n > MAX_MODULE_LINES and not path.startswith("dialects/")}
    assert not too_long, too_long
    assert max(lines.values()) > 500  # the files were read
