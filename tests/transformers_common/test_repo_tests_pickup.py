"""Issue 43: transformers' generation tests (``GenerationTesterMixin``, in the repository-only
``tests/generation/test_utils.py``) must run against GPT, XLM and T5 wherever
``$HFV_TRANSFORMERS_REPO_TESTS`` points at a checkout's ``tests/`` folder, also on a machine whose
mixin tree was first built without one (with the inert stand-ins). A stand-in checkout here holds a
mixin of two named tests; the real file is not committed (docs/transformers_tests.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.transformers_common import upstream

REPOSITORY = Path(__file__).resolve().parents[2]
MARKERS = ("test_greedy_generate_dict_outputs", "test_custom_4d_attention_mask")  # names in the checkout's mixin
CHECKOUT = {
    "generation/test_utils.py": "class GenerationTesterMixin:\n"
    + "".join(f"    def {name}(self):\n        pass\n\n" for name in MARKERS),
    "exporters/test_export.py": "class ExportTesterMixin:\n    pass\n",
    "utils/test_configuration_utils.py": "config_common_kwargs = {}\n",
}
GENERATING = {
    "test_tf_gpt.py": ("GPT2TransformersTest", "OpenAIGPTTransformersTest"),
    "test_tf_xlm.py": ("XLMTransformersTest",),
    "test_tf_t5.py": ("T5TransformersTest",),
}


def write_checkout(root: Path) -> Path:
    tests = root / "tests"
    for path, text in CHECKOUT.items():
        (tests / path).parent.mkdir(parents=True, exist_ok=True)
        (tests / path).write_text(text)
    return tests


def test_each_source_of_the_repository_files_gets_its_own_tree(tmp_path, monkeypatch):
    monkeypatch.delenv("HFV_TRANSFORMERS_REPO_TESTS", raising=False)
    monkeypatch.delenv("HFV_TRANSFORMERS_FETCH_REPO_TESTS", raising=False)
    assert upstream._tree_name() == "tree"  # the offline default: stand-ins
    checkout = write_checkout(tmp_path)
    monkeypatch.setenv("HFV_TRANSFORMERS_REPO_TESTS", str(checkout))
    with_checkout = upstream._tree_name()
    assert with_checkout != "tree"
    (checkout / "generation/test_utils.py").write_text(CHECKOUT["generation/test_utils.py"] + "# another tag\n")
    assert upstream._tree_name() not in ("tree", with_checkout)  # the checkout's files changed


def test_generation_tests_are_collected_for_gpt_xlm_and_t5_from_a_checkout(tmp_path, monkeypatch):
    try:
        sdist = upstream._sdist()  # the one the suite's harness already downloaded (or downloads now)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"transformers' sdist unavailable: {error!r}")
    cache = tmp_path / "cache"
    # A first run without a checkout (offline) built the tree with stand-ins ...
    for name in ("HFV_TRANSFORMERS_REPO_TESTS", "HFV_TRANSFORMERS_FETCH_REPO_TESTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HFV_TRANSFORMERS_TESTS_CACHE", str(cache))
    monkeypatch.setenv("HFV_TRANSFORMERS_SDIST", str(sdist))
    offline_tree = upstream.cache_root() / "tree"
    offline_tree.parent.mkdir(parents=True)
    upstream._build(offline_tree)
    assert json.loads((offline_tree / "provenance.json").read_text())["generation/test_utils.py"].startswith("stand-in")
    # ... and now the checkout is given.
    env = {
        **os.environ,
        "HFV_TRANSFORMERS_REPO_TESTS": str(write_checkout(tmp_path)),
        "HFV_TRANSFORMERS_TESTS_CACHE": str(cache),
        "HFV_TRANSFORMERS_SDIST": str(sdist),
        "PYTHONPATH": str(REPOSITORY),
    }
    env.pop("HFV_TRANSFORMERS_FETCH_REPO_TESTS", None)
    files = [f"tests/transformers_common/{name}" for name in GENERATING]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    collected = set(result.stdout.split())
    for name, classes in GENERATING.items():
        for cls in classes:
            for marker in (*MARKERS, "test_transformers_generation_mixin_available"):
                assert f"tests/transformers_common/{name}::{cls}::{marker}" in collected, (cls, marker)
    # Classes without generation (transformers' split of T5) do not get them.
    assert (
        "tests/transformers_common/test_tf_t5.py::T5EncoderOnlyTransformersTest::test_greedy_generate_dict_outputs"
        not in collected
    )
    provenance = json.loads(next(cache.glob("transformers-tests-*/tree-*/provenance.json")).read_text())
    assert provenance["generation/test_utils.py"].endswith("generation/test_utils.py")
    assert not provenance["generation/test_utils.py"].startswith("stand-in")
