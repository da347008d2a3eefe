"""A variant's folder is all of it: no variant imports another (shared code lives below them, in
``modules/`` and ``conversion/``, or beside them in ``models/configuration_base.py`` and
``models/modeling_base.py``), and every SPEC carries its registration (mini config, tiny test
config) with a README variants-table row linking its docs page (README, "Adding a variant")."""

from __future__ import annotations

import ast
import dataclasses
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
                # models/configuration_base.py and models/modeling_base.py are shared by all: not a variant
                if parts[:2] == ["hf_variants", "models"] and len(parts) > 2 and parts[2] in set(VARIANTS) - {variant}:
                    names.add(parts[2])
        if names:
            found[path.name] = names
    return found


def test_the_scan_sees_an_import_of_another_variant(tmp_path, monkeypatch):
    """The check itself: a relative and an absolute import of BERT from a fake variant are found."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "__init__.py").write_text("from ..bert.weights import KEY_MAP\n")
    (fake / "modeling_fake.py").write_text(
        "import hf_variants.models.bert.modeling_bert\nfrom ...modules import heads\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "MODELS_DIR", tmp_path)
    assert imported_variants("fake") == {"__init__.py": {"bert"}, "modeling_fake.py": {"bert"}}


# The one way a variant may build on another: its modeling file reads as "BERT + only what differs", as
# transformers' modular_roberta.py does (issue 46: SpanBERT's file shows the SBO as the one thing it adds,
# RoBERTa's its position ids). Everything else shared lives in modules/ or conversion/.
BUILDS_ON = {
    "albert": {"modeling_albert.py": {"bert"}},
    "electra": {"modeling_electra.py": {"bert"}},
    "roberta": {"modeling_roberta.py": {"bert"}},
    "spanbert": {"modeling_spanbert.py": {"bert"}},
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_variant_imports_another(variant):
    assert len(VARIANTS) >= 12
    assert imported_variants(variant) == BUILDS_ON.get(variant, {}), (
        f"{variant} imports other variants: move the shared code into modules/ or conversion/ "
        "(or, for a variant written as another plus what differs, declare it in BUILDS_ON)"
    )


# ----------------------------------------------------------------------------- the folder is the registration
REPO = MODELS_DIR.parents[1]


def registration_problems(spec, readme: str, docs_dir: Path) -> list[str]:
    """What a variant's folder leaves undeclared: its SPEC's mini config, its tiny test config
    (tests/common/tiny_variants.py), its README variants-table row (linking its docs page) and that page."""
    from hf_variants.models.named_configs import available_named_configs, named_config
    from tests.common.tiny_variants import TINY_CONFIGS

    problems = []
    if spec.mini_config not in available_named_configs():
        problems.append(f"SPEC.mini_config {spec.mini_config!r} is not a folder of modeling_configs/")
    elif named_config(spec.mini_config).model_type != spec.model_type:
        problems.append(f"SPEC.mini_config {spec.mini_config!r} is not a {spec.model_type} config")
    if not TINY_CONFIGS.get(spec.name):
        problems.append(f"no tiny test config: TINY_CONFIGS[{spec.name!r}] in tests/common/tiny_variants.py")
    page = f"docs/variants/{spec.name}.md"
    if not (docs_dir / f"{spec.name}.md").is_file():
        problems.append(f"no docs page {page}")
    row = [line for line in readme.splitlines() if line.startswith("|") and f"`{spec.model_type}`" in line]
    if not row or f"({page})" not in row[0]:
        problems.append(f"no README variants-table row for `{spec.model_type}` linking {page}")
    return problems


@pytest.mark.parametrize("model_type", sorted(hf_variants.registry.SPECS))
def test_every_variant_is_registered_by_its_folder_alone(model_type):
    spec = hf_variants.registry.SPECS[model_type]
    readme = (REPO / "README.md").read_text()
    assert registration_problems(spec, readme, REPO / "docs" / "variants") == []


def test_a_variant_missing_its_registration_is_reported(tmp_path):
    spec = dataclasses.replace(hf_variants.registry.SPECS["hfv_bert"], name="nowhere", mini_config="bert-nowhere")
    problems = registration_problems(spec, "| BERT | `hfv_nowhere` | no link |", tmp_path)
    assert len(problems) == 4, problems


@pytest.mark.parametrize("model_type", sorted(hf_variants.registry.SPECS))
def test_tiny_test_config_builds_at_tiny_sizes(model_type):
    from tests.common.tiny_variants import tiny_config, tiny_config_fields

    spec = hf_variants.registry.SPECS[model_type]
    config = tiny_config(spec)
    assert all(getattr(config, key) == value for key, value in tiny_config_fields(spec).items())
    assert config.hidden_size <= 64 and config.num_hidden_layers <= 2
    assert getattr(config, "vocab_size", 0) <= 99
