"""The old import paths of modules that moved into the packages still work for users' code.

Each old path (``hf_variants/<old>.py``) is one tiny file aliasing the new home: importing either
name gives the very same module object, so names (private ones too), monkeypatching and pickled
references behave as before the move. README "Layout" and docs/architecture.md list the moves.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import hf_variants

PACKAGE_DIR = Path(hf_variants.__file__).parent

# old dotted path -> where the module lives now
MOVED = {
    "hf_variants.atomic": "hf_variants.hub.atomic",
    "hf_variants.configs": "hf_variants.models.named_configs",
    "hf_variants.papers": "hf_variants.models.papers",
    "hf_variants.peft_targets": "hf_variants.integrations.peft_targets",
    "hf_variants.pipelines": "hf_variants.integrations.pipelines",
    "hf_variants.question_answering": "hf_variants.integrations.question_answering",
}


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_old_path_is_the_new_module(old, new):
    moved = importlib.import_module(new)
    assert importlib.import_module(old) is moved
    # the alias file is tiny and names the new home, so a reader who opens it finds the code
    alias_file = PACKAGE_DIR / (old.split(".", 1)[1] + ".py")
    text = alias_file.read_text()
    assert new in text and len(text.splitlines()) <= 15


def test_old_names_import_and_patch_as_before(monkeypatch):
    from hf_variants.atomic import staged_directory
    from hf_variants.configs import named_config
    from hf_variants.question_answering import postprocess_qa_predictions

    assert staged_directory is importlib.import_module("hf_variants.hub.atomic").staged_directory
    assert named_config("bert-mini").model_type == "hfv_bert"
    assert postprocess_qa_predictions.__module__ == "hf_variants.integrations.question_answering"
    # a patch through the old path is seen by the code in the new home (one module object)
    monkeypatch.setattr("hf_variants.configs.MODELING_CONFIGS_DIR", PACKAGE_DIR)
    assert importlib.import_module("hf_variants.models.named_configs").available_named_configs() == []


def test_package_attributes_of_the_old_names():
    """``import hf_variants`` alone gave ``hf_variants.configs``, ``.papers`` and ``.peft_targets``."""
    assert hf_variants.configs.named_config is hf_variants.named_config
    assert hf_variants.papers.BERT is hf_variants.registry.SPECS["hfv_bert"].paper
    assert hf_variants.peft_targets.register_peft_targets is not None
