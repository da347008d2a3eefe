"""The package's floors, read from its source with ``ast`` (nothing is imported or run).

- ``hf_variants/modules/`` is the ground floor: its building blocks import torch, transformers and
  the standard library, never another part of hf_variants (saving, publishing, conversion and the
  variants stand above it and use it, not the other way round).
- No two files of hf_variants import each other, directly or through others: each file can be
  read knowing only the files below it.

An import is every ``import hf_variants...`` / ``from ... import ...`` anywhere in a file (inside a
function or under ``if TYPE_CHECKING:`` too: a circle hidden in a function is still a circle) and
every ``importlib.import_module("hf_variants....")`` / ``__import__(...)`` with a literal name.
``from package import name`` counts as an import of the submodule ``package.name`` when such a
file exists, else of the package's ``__init__.py``. Importing a submodule also runs its parents'
``__init__.py`` files; those implicit imports are not counted (as in any layered package, the
parents' ``__init__`` re-export from their children).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "hf_variants"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / PACKAGE


def module_name(path: Path, root: Path) -> str:
    """hf_variants/modules/attention.py -> "hf_variants.modules.attention"; an __init__.py names its package."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _literal_import_target(node: ast.Call) -> str | None:
    """The literal module name of ``importlib.import_module("x")`` / ``import_module("x")`` /
    ``__import__("x")``, else None (a name built at run time cannot be read here)."""
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
        return first.value
    return None


def imported_modules(path: Path, root: Path, known: set[str]) -> set[str]:
    """The hf_variants modules (names in ``known``) that the file at ``path`` imports."""
    this = module_name(path, root)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    targets: set[str] = set()

    def add(module: str, names: list[str] = ()) -> None:
        if module.split(".")[0] != PACKAGE:
            return
        submodules = [f"{module}.{name}" for name in names if f"{module}.{name}" in known]
        if submodules:
            targets.update(submodules)
        if len(submodules) < len(names) or not names:
            # the rest are names defined in `module` (or its __init__): find the closest file
            while module and module not in known:
                module = module.rpartition(".")[0]
            if module:
                targets.add(module)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            add(module, [alias.name for alias in node.names if alias.name != "*"])
        elif isinstance(node, ast.Call):
            target = _literal_import_target(node)
            if target is not None:
                add(target)
    targets.discard(this)
    return targets


def import_graph(root: Path) -> dict[str, set[str]]:
    """{module: the package modules it imports} for every .py file under ``root`` (the package folder)."""
    files = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    known = set(files)
    return {name: imported_modules(path, root, known) for name, path in files.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm), each sorted;
    a module importing itself is dropped by :func:`imported_modules` and is no circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        # Iterative depth-first search: a deep package must not hit Python's recursion limit.
        work = [(node, iter(sorted(graph.get(node, ()))))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[current] = min(low[current], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[current])
            if low[current] == index[current]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == current:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


# ----------------------------------------------------------------------------- the reader itself
def _write(root: Path, files: dict[str, str]) -> Path:
    package = root / PACKAGE
    for relative, text in files.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_the_reader_sees_every_kind_of_import(tmp_path):
    """Relative, absolute, submodule-from-package, inside a function, under TYPE_CHECKING and
    through importlib with a literal name: each is an import; other packages are not."""
    package = _write(
        tmp_path,
        {
            "__init__.py": "",
            "modules/__init__.py": "",
            "modules/a.py": "import torch\nfrom ..hub.c import X\n",
            "modules/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
            "hub/__init__.py": "from .c import X\n",
            "hub/c.py": "import importlib\ndef f():\n    from hf_variants.modules import b\n"
            "    return importlib.import_module('hf_variants.top')\nX = 1\n",
            "top.py": "import hf_variants.hub\n",
        },
    )
    graph = import_graph(package)
    assert graph == {
        "hf_variants": set(),
        "hf_variants.modules": set(),
        "hf_variants.modules.a": {"hf_variants.hub.c"},
        "hf_variants.modules.b": {"hf_variants.modules.a"},
        "hf_variants.hub": {"hf_variants.hub.c"},
        "hf_variants.hub.c": {"hf_variants.modules.b", "hf_variants.top"},
        "hf_variants.top": {"hf_variants.hub"},
    }
    assert import_cycles(graph) == [
        ["hf_variants.hub", "hf_variants.hub.c", "hf_variants.modules.a", "hf_variants.modules.b", "hf_variants.top"]
    ]
    assert modules_imports_outside(graph) == {"hf_variants.modules.a": {"hf_variants.hub.c"}}


def test_the_reader_passes_a_layered_package(tmp_path):
    package = _write(
        tmp_path,
        {
            "__init__.py": "from . import models\n",
            "modules/__init__.py": "",
            "modules/blocks.py": "import torch\n",
            "modules/stack.py": "from .blocks import Block\n",
            "models/__init__.py": "",
            "models/base.py": "from ..modules.stack import Stack\nimport importlib\nimportlib.import_module(name)\n",
        },
    )
    graph = import_graph(package)
    assert import_cycles(graph) == [] and modules_imports_outside(graph) == {}


# ----------------------------------------------------------------------------- the package
def modules_imports_outside(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """{module under hf_variants.modules: the modules outside hf_variants.modules it imports}."""
    floor = f"{PACKAGE}.modules"
    inside = lambda name: name == floor or name.startswith(floor + ".")  # noqa: E731
    found = {name: {t for t in targets if not inside(t)} for name, targets in graph.items() if inside(name)}
    return {name: targets for name, targets in found.items() if targets}


@pytest.fixture(scope="module")
def package_graph() -> dict[str, set[str]]:
    graph = import_graph(PACKAGE_DIR)
    assert len(graph) > 100 and f"{PACKAGE}.modules.attention" in graph  # the real package was read
    return graph


def test_modules_is_the_ground_floor(package_graph):
    assert modules_imports_outside(package_graph) == {}, (
        "hf_variants/modules/ must import only torch, transformers and the standard library: move what "
        "needs more (saving, conversion, publishing) above it (hf_variants/models/modeling_base.py)"
    )


def test_no_import_cycles(package_graph):
    assert import_cycles(package_graph) == [], (
        "files of hf_variants import each other in a circle: move the names both sides use down, into "
        "a module both may import"
    )
