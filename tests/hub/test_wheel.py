"""``pip install .`` as a user gets it: build the wheel (no network: --no-build-isolation), check what
it carries, install it into a fresh venv (--no-deps; the dependencies come from this test venv's
site-packages through a .pth file) and use it from another directory: named configs, the
``hf-variants`` command (every subcommand it lists, each doing its work), and ``from_pretrained``
of a transformers checkpoint."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
import torch
import transformers

import hf_variants
from tests.common.hub_server import hub  # noqa: F401  (fixture: a local Hub over real HTTP)
from tests.common.paths import REPO_ROOT as REPO  # noqa: E402

# What the wheel is built from: a copy, so the build leaves nothing (build/, *.egg-info) in the checkout.
SOURCES = ["pyproject.toml", "setup.py", "README.md", "hf_variants", "modeling_configs"]

pytestmark = pytest.mark.slow


def run(command: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy
        copy(
            REPO / name,
            source / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if (REPO / name).is_dir() else {}),
        )
    dist = tmp_path_factory.mktemp("dist")
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist), "."],
        cwd=source,
    )
    (built,) = dist.glob("hf_variants-*.whl")
    return built


def test_wheel_contents(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {
        p.relative_to(REPO).as_posix() for p in (REPO / "hf_variants").rglob("*.py") if "__pycache__" not in p.parts
    }
    assert sources <= names, sorted(sources - names)[:5]
    configs = {p.relative_to(REPO).as_posix() for p in (REPO / "modeling_configs").glob("*/config.json")}
    assert len(configs) >= 10 and {"hf_variants/" + c for c in configs} <= names
    assert not any(
        n.startswith(("tests/", "examples/", "research/", "modeling_configs/", "benchmarks/")) for n in names
    )
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "hf-variants = hf_variants.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed; returns its bin/ folder."""
    root = tmp_path_factory.mktemp("venv")
    venv.create(root, with_pip=False)
    python = root / "bin" / "python"
    run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        cwd=root,
    )
    # torch, transformers ... from this venv. A plain path line: that folder's own .pth files (this
    # checkout's editable install among them) are not run, so hf_variants can only come from the wheel.
    fresh_site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root).stdout.strip()
    )
    (fresh_site / "test_dependencies.pth").write_text(
        "\n".join([sysconfig.get_paths()["purelib"], *site.getsitepackages()]) + "\n"
    )
    return root / "bin"


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["HF_HUB_OFFLINE"] = "1"
    return env


CHECK = """
import json, sys
import torch, transformers
import hf_variants
from transformers import AutoConfig

assert hf_variants.__file__.startswith(sys.prefix), hf_variants.__file__
config = hf_variants.named_config("bert-mini", num_labels=3)
assert config.model_type == "hfv_bert" and config.num_labels == 3 and config.num_hidden_layers == 4
assert AutoConfig.from_pretrained(str(hf_variants.named_config_path("spanbert-mini"))).model_type == "hfv_spanbert"

folder, expected_file = sys.argv[1], sys.argv[2]
model = hf_variants.BertForSequenceClassification.from_pretrained(folder)
ids = torch.tensor([[2, 5, 7, 11, 3]])
with torch.no_grad():
    logits = model(input_ids=ids).logits
expected = torch.tensor(json.load(open(expected_file)))
assert torch.allclose(logits, expected, atol=1e-5, rtol=0), (logits, expected)
from hf_variants.metrics import load_metric  # the evaluate modules ship inside the wheel
assert load_metric("seqeval").compute(predictions=[["B-PER", "O"]], references=[["B-PER", "O"]])["overall_f1"] == 1.0
print("OK", hf_variants.__file__)
"""


def test_installed_wheel_works_from_another_directory(installed, tmp_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, num_labels=3
    )
    theirs = transformers.BertForSequenceClassification(config).eval()
    theirs.save_pretrained(tmp_path / "checkpoint")
    with torch.no_grad():
        expected = theirs(input_ids=torch.tensor([[2, 5, 7, 11, 3]])).logits
    (tmp_path / "expected.json").write_text(json.dumps(expected.tolist()))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = elsewhere / "check.py"
    script.write_text(CHECK)
    result = run(
        [str(installed / "python"), str(script), str(tmp_path / "checkpoint"), str(tmp_path / "expected.json")],
        cwd=elsewhere,
        env=clean_env(),
    )
    assert "OK" in result.stdout and str(REPO) not in result.stdout

    help_text = run([str(installed / "hf-variants"), "--help"], cwd=elsewhere, env=clean_env()).stdout
    assert "usage: hf-variants" in help_text and "push" in help_text


def listed_subcommands(help_text: str) -> set[str]:
    """The subcommands `hf-variants --help` lists (argparse's "{card,export-code,push}" line)."""
    choices = re.search(r"\{([a-z,-]+)\}", help_text)
    assert choices, help_text
    return set(choices.group(1).split(","))


def test_every_cli_subcommand_runs_from_the_installed_wheel(installed, hub, tmp_path):
    """Each subcommand `hf-variants --help` lists does its work from the wheel, in a fresh venv and
    another directory: ``card`` writes the model card, ``export-code`` the remote code and auto_map,
    ``push`` uploads to the (local) Hub; a command added to the CLI without a run here fails."""
    torch.manual_seed(0)
    config = hf_variants.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99, num_labels=3
    )
    run_dir = tmp_path / "run"
    hf_variants.BertForSequenceClassification(config).save_pretrained(run_dir)
    # save_pretrained writes the remote code itself: take it out, so export-code has work to do.
    for name in ("configuration_bert.py", "modeling_bert.py", "modeling_bert_blocks.py"):
        (run_dir / name).unlink()
    saved = json.loads((run_dir / "config.json").read_text())
    del saved["auto_map"]
    (run_dir / "config.json").write_text(json.dumps(saved))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [chr(c) for c in range(97, 123)]) + "\n"
    )
    transformers.BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(run_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = str(installed / "hf-variants")
    env = clean_env()

    help_text = run([command, "--help"], cwd=elsewhere, env=env).stdout
    exercised = {"card", "export-code", "push"}
    assert listed_subcommands(help_text) == exercised, "a subcommand without a run from the wheel in this test"
    for name in exercised:
        assert f"usage: hf-variants {name}" in run([command, name, "--help"], cwd=elsewhere, env=env).stdout

    out = run([command, "card", str(run_dir)], cwd=elsewhere, env=env).stdout
    card = (run_dir / "README.md").read_text()
    assert f"wrote {run_dir}/README.md" in out and "pipeline_tag: text-classification" in card and "N19-1423" in card

    out = run([command, "export-code", str(run_dir)], cwd=elsewhere, env=env).stdout
    saved = json.loads((run_dir / "config.json").read_text())
    assert "modeling_bert.py" in out and saved["auto_map"]["AutoConfig"] == "configuration_bert.BertConfig"
    assert (run_dir / "modeling_bert.py").is_file() and (run_dir / "configuration_bert.py").is_file()

    hub_env = {k: v for k, v in hub.env(tmp_path / "hf-home").items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    out = run(
        [command, "push", str(run_dir), "org/from-wheel", "--message", "from the wheel"], cwd=elsewhere, env=hub_env
    ).stdout
    assert "org/from-wheel" in out
    pushed = hub.store.commit(hub.store.resolve("models", "org/from-wheel", "main"))
    assert pushed["title"] == "from the wheel"
    assert {"model.safetensors", "config.json", "README.md", "modeling_bert.py"} <= set(pushed["tree"])
    # A bad repo id is the CLI's clear error (exit status 1), not a traceback.
    refused = subprocess.run(
        [command, "push", str(run_dir), "not a repo"],
        cwd=elsewhere,
        env=hub_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 1 and refused.stderr.startswith("hf-variants: error:"), refused.stderr
