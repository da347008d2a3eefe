"""transformers' own `model.push_to_hub` and `Trainer.push_to_hub` with our models, against the local Hub."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from datasets import Dataset
from huggingface_hub import HfApi, hf_hub_download
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
from transformers.dynamic_module_utils import get_class_from_dynamic_module

import hf_variants
from hf_variants.models.modeling_base import RemoteCodeMixin
from hf_variants.registry import REGISTERED
from tests.common.hub_server import hub  # noqa: F401  (fixture)

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99)


def assert_same_model(expected: torch.nn.Module, actual: torch.nn.Module) -> None:
    expected_state, actual_state = expected.state_dict(), actual.state_dict()
    assert sorted(expected_state) == sorted(actual_state)
    assert all(torch.equal(expected_state[k], actual_state[k]) for k in expected_state)
    input_ids = torch.randint(5, 99, (2, 9))
    with torch.no_grad():
        assert torch.equal(expected.eval()(input_ids=input_ids).logits, actual.eval()(input_ids=input_ids).logits)


def test_model_push_to_hub_then_auto_class_pull(hub, tmp_path):
    model = hf_variants.BertForSequenceClassification(hf_variants.BertConfig(**TINY, num_labels=3))
    commit = model.push_to_hub("org/pushed-by-transformers")
    assert commit.oid == hub.store.resolve("models", "org/pushed-by-transformers", "main")
    files = set(HfApi().list_repo_files("org/pushed-by-transformers"))
    assert {"model.safetensors", "config.json", "README.md"} <= files
    pulled = AutoModelForSequenceClassification.from_pretrained("org/pushed-by-transformers", cache_dir=tmp_path / "c")
    assert type(pulled) is hf_variants.BertForSequenceClassification
    assert_same_model(model, pulled)
    assert hub.unhandled == []


if issubclass(hf_variants.BertForSequenceClassification, RemoteCodeMixin):
    BertWithRemoteCode = hf_variants.BertForSequenceClassification
else:  # the hook not (yet) in the variant's bases: add it the way EncoderPreTrainedModel would

    class BertWithRemoteCode(RemoteCodeMixin, hf_variants.BertForSequenceClassification):
        """Our classifier with the save hook."""


def test_save_hook_makes_push_to_hub_carry_remote_code(hub, tmp_path):
    model = BertWithRemoteCode(hf_variants.BertConfig(**TINY, num_labels=2))
    model.push_to_hub("org/with-remote-code")
    files = set(HfApi().list_repo_files("org/with-remote-code"))
    config = json.loads(Path(hf_hub_download("org/with-remote-code", "config.json")).read_text())
    assert set(config["auto_map"]) == {"AutoConfig", *REGISTERED["hfv_bert"]}
    assert {target.split(".")[0] + ".py" for target in config["auto_map"].values()} <= files
    # In this process hf_variants is registered, and transformers prefers registered classes over a repo's
    # code even with trust_remote_code=True; so take the repo's class explicitly (fresh-process loading
    # through the Auto classes is tested in test_hub_push.py).
    remote_class = get_class_from_dynamic_module(
        config["auto_map"]["AutoModelForSequenceClassification"], "org/with-remote-code", cache_dir=tmp_path / "c"
    )
    assert remote_class.__module__.startswith("transformers_modules.")  # the repo's code, not hf_variants
    pulled = remote_class.from_pretrained("org/with-remote-code", cache_dir=tmp_path / "c")
    assert_same_model(model, pulled)


def test_trainer_push_to_hub(hub, tmp_path):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 99, size=(64, 10))
    data = Dataset.from_dict({"input_ids": ids.tolist(), "labels": (ids == 7).any(1).astype(int).tolist()})
    args = TrainingArguments(
        str(tmp_path / "out"),
        max_steps=4,
        per_device_train_batch_size=16,
        report_to=[],
        save_strategy="no",
        hub_model_id="org/trainer-pushed",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(
        hf_variants.BertForSequenceClassification(hf_variants.BertConfig(**TINY, num_labels=2)),
        args,
        train_dataset=data,
    )
    trainer.train()
    commit = trainer.push_to_hub()
    assert commit.oid == hub.store.resolve("models", "org/trainer-pushed", "main")
    files = set(HfApi().list_repo_files("org/trainer-pushed"))
    assert {"model.safetensors", "config.json", "README.md"} <= files
    pulled = AutoModelForSequenceClassification.from_pretrained("org/trainer-pushed", cache_dir=tmp_path / "c")
    assert_same_model(trainer.model.cpu(), pulled)
    assert hub.unhandled == []
