"""The generated remote code, for every registered variant: self-contained and complete."""

from __future__ import annotations

import ast

import pytest

import hf_variants  # noqa: F401  (registers the variants)
from hf_variants.hub.remote_code import flat_module_name, generate_remote_code
from hf_variants.registry import REGISTERED


@pytest.mark.parametrize("model_type", sorted(REGISTERED))
def test_generated_code_is_self_contained_and_covers_the_auto_map(model_type):
    files, auto_map = generate_remote_code(model_type)
    assert set(auto_map) == {"AutoConfig", *REGISTERED[model_type]}
    for name, source in files.items():
        tree = ast.parse(source)
        compile(tree, name, "exec")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert all(alias.name.split(".")[0] != "hf_variants" for alias in node.names), name
            elif isinstance(node, ast.ImportFrom):
                assert node.level in (0, 1) and (node.module or "").split(".")[0] != "hf_variants", name
                if node.level == 1:  # transformers' loader fetches exactly these sibling files
                    assert f"{node.module}.py" in files, (name, node.module)
    for target in auto_map.values():
        module, class_name = target.split(".")
        defined = {n.name for n in ast.walk(ast.parse(files[module + ".py"])) if isinstance(n, ast.ClassDef)}
        assert class_name in defined, target


def test_flat_module_names():
    assert flat_module_name("hf_variants.modules.attention") == "hfv_modules_attention"
    assert flat_module_name("hf_variants.models.bert.modeling_bert") == "hfv_models_bert_modeling_bert"
    with pytest.raises(ValueError, match="not a module of the hf_variants package"):
        flat_module_name("transformers.models.bert")
