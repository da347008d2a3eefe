"""``VariantSpec`` declares only what the library and its users' scripts read.

A field that only the tests or the benchmarks read (tiny test sizes, benchmark workloads, the
fuzzer's knowledge of a variant) belongs with them, not in the one declaration of a variant. Each
field's readers are found in the source with ``ast`` (nothing is imported or run): an attribute
access ``<something naming a spec>.<field>`` (``spec.paper``, ``SPEC.name``,
``spec_for(model_type).tokenizer_kind``) in a file outside ``tests/`` and ``benchmarks/``, and
outside ``VariantSpec``'s own class body.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from hf_variants.registry import VariantSpec

REPO = Path(__file__).resolve().parents[1]
# Folders whose code may not be a field's only reader, and folders that hold no project code.
NOT_READERS = {"tests", "benchmarks", "docs", "build", "dist"}


def project_sources(root: Path) -> list[Path]:
    """The project's Python files that count as readers: the package, the example scripts and any
    other top-level folder of code (the research application), not tests/, benchmarks/ or venvs."""
    return sorted(
        path
        for path in root.rglob("*.py")
        if not any(part in NOT_READERS or part.startswith(".") for part in path.relative_to(root).parts[:-1])
    )


def _names_a_spec(node: ast.expr) -> bool:
    """True when the expression an attribute is read from plainly holds a spec (``spec``, ``_spec``,
    ``SPEC``, ``SPECS[...]``, ``spec_for(...)``, ``self.spec``)."""
    return "spec" in ast.unparse(node).lower()


def field_readers(fields: list[str], sources: list[Path], root: Path) -> dict[str, list[str]]:
    """Field name -> the files (relative to ``root``) that read it from a spec."""
    readers: dict[str, set[str]] = {name: set() for name in fields}
    for path in sources:
        tree = ast.parse(path.read_text(), filename=str(path))
        own_body = {
            id(node)
            for cls in ast.walk(tree)
            if isinstance(cls, ast.ClassDef) and cls.name == "VariantSpec"
            for node in ast.walk(cls)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in readers
                and id(node) not in own_body
                and _names_a_spec(node.value)
            ):
                readers[node.attr].add(str(path.relative_to(root)))
    return {name: sorted(files) for name, files in readers.items()}


SPEC_FIELDS = [spec_field.name for spec_field in dataclasses.fields(VariantSpec)]


def test_the_fields_are_the_declared_ones():
    """The list the next test walks is VariantSpec's (a field added later is checked too)."""
    assert {"name", "config_class", "classes", "paper", "mini_config", "weights"} <= set(SPEC_FIELDS)
    for moved in ("tiny_config", "reference_config_overrides", "compile_benchmark", "exports"):
        assert moved not in SPEC_FIELDS, f"{moved} belongs with the tests or benchmarks that read it"


@pytest.mark.parametrize("spec_field", SPEC_FIELDS)
def test_every_field_is_read_outside_the_tests_and_benchmarks(spec_field):
    readers = field_readers(SPEC_FIELDS, project_sources(REPO), REPO)[spec_field]
    assert readers, f"VariantSpec.{spec_field} is read only by tests or benchmarks: move it there"


def test_a_field_only_tests_read_is_found(tmp_path):
    """The reader search tells a library read from a test-only one and ignores VariantSpec's own body."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "registry.py").write_text(
        "class VariantSpec:\n    def model_type(self):\n        return self.spec.tiny_config\n"
        "def register(spec):\n    return spec.weights\n"
    )
    (tmp_path / "pkg" / "other.py").write_text("def f(config):\n    return config.tiny_config\n")  # not a spec
    (tmp_path / "tests" / "test_x.py").write_text("def test(spec):\n    assert spec.tiny_config\n")
    readers = field_readers(["weights", "tiny_config"], project_sources(tmp_path), tmp_path)
    assert readers == {"weights": ["pkg/registry.py"], "tiny_config": []}
