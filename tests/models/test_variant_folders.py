"""The variants' folders stand on their own: no variant imports another (shared code lives below
them, in ``modules/`` and ``conversion/``)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import hf_variants

MODELS_DIR = Path(hf_variants.__file__).parent / "models"
VARIANTS = sorted(p.name for p in MODELS_DIR.iterdir() if (p / "__init__.py").is_file())


def imported_variants(variant: str) -> dict[str, set[str]]:
    """file name -> the other variants its imports (absolute, relative or through importlib) name."""
    found: dict[str, set[str]] = {}
    for path in sorted((MODELS_DIR / variant).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            modules = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                depth = len(path.relative_to(MODELS_DIR).parts) - 1  # folders below models/
                if node.level == depth + 1:  # relative to hf_variants.models
                    modules = [node.module] if node.module else [alias.name for alias in node.names]
                    modules = [f"hf_variants.models.{m}" for m in modules]
                elif node.level == 0 and node.module:
                    modules = [node.module]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                modules = [node.value] if node.value.startswith("hf_variants.models.") else []  # importlib
            for module in modules:
                parts = module.split(".")
                if parts[:2] == ["hf_variants", "models"] and len(parts) > 2 and parts[2] != variant:
                    names.add(parts[2])
        if names:
            found[path.name] = names
    return found


def test_the_scan_sees_an_import_of_another_variant(tmp_path, monkeypatch):
    """The check itself: a relative and an absolute import of BERT from a fake variant are found."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "__init__.py").write_text("from ..bert.weights import KEY_MAP\n")
    (fake / "modeling_fake.py").write_text("import hf_variants.models.bert.modeling_bert\nfrom ...modules import heads\n")
    monkeypatch.setattr(sys.modules[__name__], "MODELS_DIR", tmp_path)
    assert imported_variants("fake") == {"__init__.py": {"bert"}, "modeling_fake.py": {"bert"}}


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_variant_imports_another(variant):
    assert len(VARIANTS) >= 12
    assert imported_variants(variant) == {}, f"{variant} imports other variants: move the shared code into modules/ or conversion/"

