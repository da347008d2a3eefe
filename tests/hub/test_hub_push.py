"""push_model_dir / `hf-variants push` against the local Hub server, pulled back in fresh processes."""

from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path

import pytest
import torch
from huggingface_hub import HfApi, hf_hub_download
from safetensors.torch import save_file
from transformers import AutoModelForSequenceClassification, BertTokenizerFast

import hf_variants
from hf_variants.cli import main as cli_main
from hf_variants.hub import PushError, push_model_dir
from hf_variants.hub.remote_code import code_file_stems
from hf_variants.modules.configuration import DecoderConfig
from hf_variants.registry import REGISTERED
from tests.common.hub_server import finish_client, hub, start_client  # noqa: F401  (hub is a fixture)
from tests.common.paths import REPO_ROOT

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "the a of and to in is was it for on that with as his her he she at by had not be but cat sat mat "
    "dog ran far away home house garden tree walked slowly quickly said"
).split()
SENTENCES = ["the cat sat on the mat", "a dog ran far away from home", "she walked slowly"]


def tiny_vocab() -> list[str]:
    """99 WordPiece entries (specials, whole words, letters and ## continuations), as the tiny configs."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = SPECIAL_TOKENS + WORDS + letters + ["##" + c for c in letters]
    return vocab[:99]


def tree_digest(directory: Path) -> str:
    """sha256 over every file's relative path, bytes and mtime: any change to the directory shows."""
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        digest.update(str(path.relative_to(directory)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
            digest.update(str(path.stat().st_mtime_ns).encode())
    return digest.hexdigest()


# Every registered encoder variant with a sequence classifier, read from the specs (the run
# directory below holds a BERT tokenizer and the check reads base_model(**batch): encoder-decoders
# such as T5 need decoder inputs and their own tokenizer).
VARIANTS = {  # model_type -> (config class, classifier class)
    model_type: (spec.config_class, spec.classes["ForSequenceClassification"])
    for model_type, spec in hf_variants.registry.SPECS.items()
    if "ForSequenceClassification" in spec.classes and not spec.config_class().is_encoder_decoder
}


def make_run_dir(tmp_path: Path, model_type: str = "hfv_bert") -> Path:
    """A run's output directory: our classifier, its tokenizer, and Trainer leftovers to skip."""
    out = tmp_path / "run"
    config_class, model_class = VARIANTS[model_type]
    # embedding_size = hidden_size: no factorization, valid for variants whose default E is larger (ALBERT's 128).
    # Decoders (GPT) default to their real vocabulary's special ids: the tiny vocabulary's instead
    # (its [PAD] is 0; a batch of sentences needs a padding id to find each row's last token).
    special = (
        dict(pad_token_id=0, bos_token_id=None, eos_token_id=None) if issubclass(config_class, DecoderConfig) else {}
    )
    config = config_class(
        hidden_size=32,
        embedding_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        vocab_size=99,
        num_labels=3,
        **special,
    )
    model = model_class(config).eval()
    model.save_pretrained(out)
    (tmp_path / "vocab.txt").write_text("\n".join(tiny_vocab()) + "\n")
    BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt")).save_pretrained(out)
    (out / "training_args.bin").write_bytes(b"\x80\x04 Trainer pickle placeholder")  # must be skipped
    (out / "checkpoint-10").mkdir()
    (out / "checkpoint-10" / "optimizer.pt").write_bytes(b"\x80\x04")
    return out


@pytest.fixture
def run_dir(tmp_path) -> Path:
    return make_run_dir(tmp_path)


def reference_outputs(run_dir: Path, destination: Path) -> Path:
    """Saves the in-memory model's weights and outputs (1 thread: bit-exact across processes)."""
    model = AutoModelForSequenceClassification.from_pretrained(run_dir).eval()
    batch = BertTokenizerFast.from_pretrained(run_dir)(SENTENCES, padding=True, return_tensors="pt")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            logits = model(**batch).logits
            hidden = model.base_model(**batch).last_hidden_state
    finally:
        torch.set_num_threads(threads)
    tensors = {f"state.{k}": v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    tensors.update({f"batch.{k}": v for k, v in batch.items()}, logits=logits, hidden=hidden)
    save_file(tensors, destination)
    return destination


PULL_SCRIPT = r"""
import importlib.abc, json, os, sys
remote_code = os.environ["PULL_MODE"] == "remote_code"
if remote_code:
    class BlockHfVariants(importlib.abc.MetaPathFinder):  # prove the repo's code is self-contained
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] == "hf_variants":
                raise ImportError("hf_variants must not be needed to load remote code")
    sys.meta_path.insert(0, BlockHfVariants())
else:
    import hf_variants  # registers hfv_bert with the Auto classes
import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

torch.set_num_threads(1)
repo, ref = os.environ["PULL_REPO"], load_file(os.environ["PULL_REFERENCE"])
kwargs = {"trust_remote_code": True} if remote_code else {}
model = AutoModelForSequenceClassification.from_pretrained(repo, **kwargs).eval()
bare = AutoModel.from_pretrained(repo, **kwargs).eval()
batch = AutoTokenizer.from_pretrained(repo, **kwargs)(%r, padding=True, return_tensors="pt")
with torch.no_grad():
    logits, hidden = model(**batch).logits, bare(**batch).last_hidden_state
state = model.state_dict()
# Every Auto class of the config's auto_map must resolve (other heads than this checkpoint's get fresh weights).
auto_map = model.config.auto_map if remote_code else {}
loaded_heads = {name: type(getattr(transformers, name).from_pretrained(repo, ignore_mismatched_sizes=True,
                                                                       **kwargs)).__name__
                for name in auto_map if name != "AutoConfig"}
ref_state = {k[len("state."):]: v for k, v in ref.items() if k.startswith("state.")}
print(json.dumps({
    "model_class": type(model).__module__ + "." + type(model).__name__,
    "hf_variants_imported": any(m.split(".")[0] == "hf_variants" for m in sys.modules),
    "same_keys": sorted(state) == sorted(ref_state),
    "weights_identical": all(torch.equal(state[k], ref_state[k]) for k in ref_state if k in state),
    "tokens_identical": all(torch.equal(batch[k], ref["batch." + k]) for k in batch),
    "logits_identical": torch.equal(logits, ref["logits"]),
    "hidden_identical": torch.equal(hidden, ref["hidden"]),
    "loaded_heads": loaded_heads, "auto_map": auto_map,
}))
""" % (SENTENCES,)


def start_pull(hub, repo_id: str, reference: Path, mode: str, tmp_path: Path):
    hf_home = tmp_path / f"hf-home-{mode}"  # empty cache: everything comes over HTTP
    hf_home.mkdir()
    env = hub.env(hf_home)
    env.update(PULL_MODE=mode, PULL_REPO=repo_id, PULL_REFERENCE=str(reference))
    if mode == "installed":
        env["PYTHONPATH"] = str(REPO_ROOT)
    return start_client(PULL_SCRIPT, env)


@pytest.mark.parametrize("model_type", sorted(VARIANTS))
def test_push_then_pull_in_fresh_processes_is_bit_identical(hub, model_type, tmp_path):
    run_dir = make_run_dir(tmp_path, model_type)
    repo_id = f"org/tiny-{model_type.replace('_', '-')}"
    model_class = VARIANTS[model_type][1]
    modeling = model_class.__module__.removeprefix("hf_variants.models.")
    before = tree_digest(run_dir)
    result = push_model_dir(run_dir, repo_id)
    assert tree_digest(run_dir) == before  # auto_map/code/card were generated in staging only

    files = {f.rfilename: f for f in HfApi().model_info(repo_id, files_metadata=True).siblings}
    code_files = {name for name in files if name.endswith(".py")}
    assert {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json", "README.md"} <= set(files)
    config_stem, modeling_stem = code_file_stems(model_type)
    assert code_files == {
        f"{config_stem}.py",
        f"{modeling_stem}.py",
        f"{modeling_stem}_blocks.py",
    }  # the flat files only
    assert files["model.safetensors"].lfs is not None  # weights went through the LFS batch API
    assert not any(name.endswith((".bin", ".pt")) for name in files)
    assert set(result.skipped) == {"training_args.bin", "checkpoint-10/"}
    assert hub.count("POST", r"/commit/") == 1  # one commit for everything

    reference = reference_outputs(run_dir, tmp_path / "reference.safetensors")
    # Both clients run at once (each pays torch + transformers start-up), each with its own empty cache.
    remote = start_pull(hub, repo_id, reference, "remote_code", tmp_path)
    installed = start_pull(hub, repo_id, reference, "installed", tmp_path)
    remote, installed = finish_client(remote), finish_client(installed)
    for outcome in (remote, installed):
        assert outcome["same_keys"] and outcome["weights_identical"], outcome
        assert outcome["tokens_identical"] and outcome["logits_identical"] and outcome["hidden_identical"], outcome
    assert remote["model_class"].startswith("transformers_modules.")
    heads = {name: target.split(".")[1] for name, target in remote["auto_map"].items() if name != "AutoConfig"}
    assert remote["loaded_heads"] == heads and set(heads) == set(REGISTERED[model_type])
    assert not remote["hf_variants_imported"]
    assert installed["model_class"] == f"hf_variants.models.{modeling}.{VARIANTS[model_type][1].__name__}"
    assert hub.unhandled == []  # the clients used nothing the server does not emulate


def test_auto_map_covers_every_registered_auto_class(hub, run_dir):
    push_model_dir(run_dir, "org/auto-map")
    config = json.loads(Path(hf_hub_download("org/auto-map", "config.json")).read_text())
    assert set(config["auto_map"]) == {"AutoConfig", *REGISTERED[config["model_type"]]}
    for target in config["auto_map"].values():
        module, _, class_name = target.partition(".")
        source = Path(hf_hub_download("org/auto-map", module + ".py")).read_text()
        assert f"class {class_name}(" in source
        tree = ast.parse(source)
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not any(name.split(".")[0] == "hf_variants" for name in imported)


@pytest.mark.parametrize("bad_id", ["org/name/extra", "org/bad..name", "-org/name", "org/name.git", "", "a" * 97])
def test_malformed_repo_id_is_refused_before_any_request(hub, run_dir, bad_id):
    with pytest.raises(ValueError, match="repo id"):
        push_model_dir(run_dir, bad_id)
    assert hub.requests == []


def test_pickled_weights_are_refused(hub, run_dir):
    (run_dir / "pytorch_model.bin").write_bytes(b"\x80\x04 not uploaded")
    with pytest.raises(ValueError, match="pytorch_model.bin"):
        push_model_dir(run_dir, "org/pickles")
    assert hub.requests == []


@pytest.mark.parametrize("mode", ["error", "drop"])
def test_failed_commit_names_repo_and_cause_leaves_dir_untouched_and_retry_completes(hub, run_dir, mode):
    before = tree_digest(run_dir)
    hub.inject_failure("commit", times=1, mode=mode)
    with pytest.raises(PushError) as failure:
        push_model_dir(run_dir, "org/flaky")
    message = str(failure.value)
    assert "'org/flaky'" in message and str(run_dir) in message
    assert ("500" in message and "Injected internal error" in message) if mode == "error" else "Error" in message
    assert tree_digest(run_dir) == before
    files_after_failure = HfApi().list_repo_files("org/flaky")
    assert files_after_failure == [".gitattributes"]  # nothing half-committed

    result = push_model_dir(run_dir, "org/flaky")
    assert "model.safetensors" in HfApi().list_repo_files("org/flaky", revision=result.commit_oid)
    assert tree_digest(run_dir) == before
    # The weights reached LFS storage in the failed attempt: the retry does not send them again.
    assert hub.count("PUT", r"^/lfs-upload/") == 1


def test_connection_dropped_mid_weight_upload_is_retried_by_the_client(hub, run_dir):
    hub.inject_failure("lfs_upload", times=1, mode="drop")
    result = push_model_dir(run_dir, "org/dropped-upload")
    assert hub.count("PUT", r"^/lfs-upload/") == 2  # first attempt cut, second one complete
    stored = hub.store.lfs_path(hashlib.sha256((run_dir / "model.safetensors").read_bytes()).hexdigest())
    assert stored.read_bytes() == (run_dir / "model.safetensors").read_bytes()
    assert result.commit_oid == hub.store.resolve("models", "org/dropped-upload", "main")


def test_cli_push(hub, run_dir, capsys):
    assert cli_main(["push", str(run_dir), "org/from-cli", "--message", "first upload"]) == 0
    assert "org/from-cli" in capsys.readouterr().out
    head = hub.store.resolve("models", "org/from-cli", "main")
    assert hub.store.commit(head)["title"] == "first upload"
    assert cli_main(["push", str(run_dir), "org/from-cli", "--revision", "dev"]) == 0
    # The branch is created from main; unchanged files make the commit a no-op (client-side skip).
    assert hub.store.resolve("models", "org/from-cli", "dev") == head
    assert cli_main(["push", str(run_dir), "not a repo"]) == 1
    assert "Invalid Hub repo id" in capsys.readouterr().err
    assert os.path.exists(run_dir / "config.json")


def test_server_answers_like_the_hub_for_missing_things_and_long_listings(hub, run_dir):
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, RepositoryNotFoundError

    push_model_dir(run_dir, "org/listing")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download("org/listing", "no-such-file.json")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/no-such-repo", "config.json")
    with pytest.raises(HfHubHTTPError, match="401"):
        HfApi(token=False).create_repo("org/anonymous")
    expected = {p.path for p in HfApi().list_repo_tree("org/listing", recursive=True)}
    hub.tree_page_size = 3  # force the Link-header pagination the client must follow
    assert set(HfApi().list_repo_files("org/listing")) == expected and len(expected) > 2 * hub.tree_page_size


def test_export_code_cli_writes_code_and_auto_map_and_rejects_unknown_variants(run_dir, capsys):
    assert cli_main(["export-code", str(run_dir)]) == 0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["auto_map"]["AutoModel"] == "modeling_bert.BertModel"
    assert (run_dir / "modeling_bert.py").read_text().startswith("# Generated by hf-variants")
    assert sorted(p.name for p in run_dir.glob("*.py")) == [
        "configuration_bert.py",
        "modeling_bert.py",
        "modeling_bert_blocks.py",
    ]
    config["model_type"] = "hfv_not_a_variant"
    (run_dir / "config.json").write_text(json.dumps(config))
    assert cli_main(["export-code", str(run_dir)]) == 1
    assert "'hfv_not_a_variant' is not an hf-variants model type" in capsys.readouterr().err
