"""Loading a damaged or mismatched checkpoint into an hf-variants model raises a ValueError naming
the file and the key, through our classes and through the Auto classes; pickled weights are
never loaded (hf_variants.hub.load_checks)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForMaskedLM, AutoModelForSequenceClassification

import hf_variants

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ckpt") / "mlm"
    torch.manual_seed(0)
    hf_variants.BertForMaskedLM(hf_variants.BertConfig(**TINY)).save_pretrained(folder)
    return folder


def damaged(saved: Path, tmp_path: Path, edit) -> Path:
    folder = tmp_path / "damaged"
    shutil.copytree(saved, folder)
    edit(folder)
    return folder


def rewrite_weights(folder: Path, change) -> None:
    tensors = load_file(folder / "model.safetensors")
    change(tensors)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})


def first_key(tensors: dict, part: str) -> str:
    return next(key for key in sorted(tensors) if part in key)


def truncate(folder: Path) -> None:
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def corrupt_header(folder: Path) -> None:
    path = folder / "model.safetensors"
    data = bytearray(path.read_bytes())
    start = data.index(b'"data_offsets"')
    data[start + 1 : start + 13] = b"XXXXXXXXXXXX"  # same length: the JSON stays valid, an entry loses its offsets
    path.write_bytes(bytes(data))


CASES = {  # name -> (edit, pattern the message must match)
    "truncated weights": (truncate, r"model\.safetensors: truncated or corrupted"),
    "empty weights": (lambda f: (f / "model.safetensors").write_bytes(b""), r"model\.safetensors: 0 bytes"),
    "corrupted header": (
        corrupt_header,
        r"model\.safetensors: corrupted safetensors header \(entry '[\w.]+' has no valid data_offsets\)",
    ),
    "wrong shape": (
        lambda f: rewrite_weights(
            f,
            lambda t: t.update(
                {(k := first_key(t, "layers.1.attention")): torch.zeros(t[k].shape[0] + 1, *t[k].shape[1:])}
            ),
        ),
        r"model\.safetensors: weights of the wrong shape for BertForMaskedLM: bert\.encoder\.layers\.1\.attention\.\S+: checkpoint \(\d+,",
    ),
    "wrong dtype": (
        lambda f: rewrite_weights(
            f, lambda t: t.update({(k := first_key(t, "layer_norm.weight")): t[k].to(torch.int32)})
        ),
        r"weights of the wrong dtype: bert\.\S+layer_norm\.weight is I32 in model\.safetensors but torch\.float32",
    ),
    "missing key": (
        lambda f: rewrite_weights(f, lambda t: t.pop(first_key(t, "layers.1.attention"))),
        r"model\.safetensors does not match BertForMaskedLM \(hfv_bert\): missing bert\.encoder\.layers\.1\.attention\.",
    ),
    "extra key": (
        lambda f: rewrite_weights(f, lambda t: t.update({"bert.encoder.layers.5.feed_forward.weight": torch.zeros(3)})),
        r"does not match BertForMaskedLM \(hfv_bert\): unexpected bert\.encoder\.layers\.5\.feed_forward\.weight",
    ),
    "pickled weights only": (
        lambda f: (
            torch.save(load_file(f / "model.safetensors"), f / "pytorch_model.bin"),
            os.remove(f / "model.safetensors"),
        ),
        r"holds only pickled weights \(pytorch_model\.bin\): hf-variants loads safetensors only",
    ),
}


@pytest.mark.parametrize("loader", ["our class", "auto class"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_damaged_checkpoint_raises_a_value_error_naming_file_and_key(saved, tmp_path, case, loader):
    edit, pattern = CASES[case]
    folder = damaged(saved, tmp_path, edit)
    load = (
        hf_variants.BertForMaskedLM.from_pretrained if loader == "our class" else AutoModelForMaskedLM.from_pretrained
    )
    with pytest.raises(ValueError, match=pattern) as failure:
        load(folder)
    assert str(folder) in str(failure.value)


def test_pickled_weights_are_never_unpickled(saved, tmp_path):
    """A pytorch_model.bin whose pickle would run code when loaded: refused before any unpickling."""
    marker = tmp_path / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    folder = damaged(saved, tmp_path, lambda f: os.remove(f / "model.safetensors"))
    torch.save({"weights": Payload()}, folder / "pytorch_model.bin")
    with pytest.raises(ValueError, match="only pickled weights"):
        AutoModelForMaskedLM.from_pretrained(folder)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (
            lambda text: text[: len(text) // 2],
            r"config\.json is corrupted: not valid JSON \(.* at line \d+ column \d+\)",
        ),
        (
            lambda text: json.dumps({**json.loads(text), "model_type": "hfv_nonexistent"}),
            r"config\.json: key 'model_type' is 'hfv_nonexistent', a model type neither hf-variants \(.*hfv_bert",
        ),
    ],
    ids=["corrupted config.json", "unknown model_type"],
)
def test_bad_config_raises_a_value_error_naming_file_and_key(saved, tmp_path, edit, pattern):
    folder = damaged(saved, tmp_path, lambda f: (f / "config.json").write_text(edit((f / "config.json").read_text())))
    with pytest.raises(ValueError, match=pattern):
        hf_variants.BertForMaskedLM.from_pretrained(folder)


def test_corrupted_config_through_the_auto_classes_names_the_file(saved, tmp_path):
    """AutoConfig reads config.json before any hf-variants code runs: transformers' own error, which
    names the file."""
    folder = damaged(saved, tmp_path, lambda f: (f / "config.json").write_text('{"model_type": "hfv_b'))
    with pytest.raises((ValueError, OSError), match=r"config\.json"):
        AutoModelForMaskedLM.from_pretrained(folder)


def test_legitimate_partial_loads_still_work(saved, tmp_path):
    """What fine-tuning needs keeps transformers' behaviour: a new head on a pretrained encoder
    (classifier and pooler initialised, MLM head dropped), re-initialised mismatched weights on
    request, half-precision checkpoints converted."""
    model, info = AutoModelForSequenceClassification.from_pretrained(saved, num_labels=3, output_loading_info=True)
    assert {key.split(".")[0] for key in info["missing_keys"]} <= {"classifier", "bert"}
    assert all(key.startswith(("classifier.", "bert.pooler.")) for key in info["missing_keys"])
    reference = hf_variants.BertForMaskedLM.from_pretrained(saved)
    torch.testing.assert_close(
        model.bert.embeddings.word_embeddings.weight, reference.bert.embeddings.word_embeddings.weight
    )

    wide = damaged(
        saved,
        tmp_path,
        lambda f: rewrite_weights(
            f,
            lambda t: t.update(
                {(k := first_key(t, "layers.1.attention")): torch.zeros(t[k].shape[0] + 1, *t[k].shape[1:])}
            ),
        ),
    )
    hf_variants.BertForMaskedLM.from_pretrained(wide, ignore_mismatched_sizes=True)  # asked for: no error

    half = tmp_path / "half"
    reference.half().save_pretrained(half)
    loaded = hf_variants.BertForMaskedLM.from_pretrained(half, dtype=torch.float32)
    assert loaded.bert.embeddings.word_embeddings.weight.dtype == torch.float32
