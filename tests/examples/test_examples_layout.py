"""examples/ holds the scripts users run and one support module (issue 44): each script runs on its
own, none imports another, and no file there edits ``sys.path`` (read with ``ast``, nothing run)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.common.paths import EXAMPLES_DIR

SUPPORT_MODULE = "examples_support"
# The scripts the README, docs/ and the product card name, by path.
USER_SCRIPTS = {
    "quickstart",
    "run_clm",
    "run_distillation",
    "run_glue",
    "run_image_classification",
    "run_mae",
    "run_ner",
    "run_pretraining",
    "run_qa",
    "run_seq2seq",
    "run_swag",
    "run_token_distillation",
    "run_translation",
}


def example_files() -> dict[str, Path]:
    return {path.stem: path for path in sorted(EXAMPLES_DIR.glob("*.py"))}


def imported_top_level_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def edits_sys_path(tree: ast.AST) -> bool:
    """Any ``sys.path`` attribute read or written (insert, append, assignment)."""
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
        for node in ast.walk(tree)
    )


def test_examples_holds_the_user_scripts_and_one_support_module():
    assert set(example_files()) == USER_SCRIPTS | {SUPPORT_MODULE}


def test_no_script_imports_another_and_none_edits_sys_path():
    files = example_files()
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        siblings = imported_top_level_names(tree) & set(files)
        allowed = set() if name == SUPPORT_MODULE else {SUPPORT_MODULE}
        assert siblings <= allowed, f"examples/{name}.py imports {sorted(siblings - allowed)}"
        assert not edits_sys_path(tree), f"examples/{name}.py touches sys.path"


def test_the_checks_see_what_they_look_for(tmp_path):
    """The readers flag a sibling import and a sys.path edit (so the tests above can fail)."""
    tree = ast.parse("import sys\nsys.path.insert(0, '.')\nfrom run_glue import main\nimport examples_support as s\n")
    assert edits_sys_path(tree) and {"run_glue", "examples_support"} <= imported_top_level_names(tree)
    assert not edits_sys_path(ast.parse("import sys\nargv = sys.argv\n"))
