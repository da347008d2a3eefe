"""``Trainer.push_to_hub`` publishes hf-variants' model card (model-index with the run's metrics,
training curve), not transformers' default one: a real Trainer run pushed through the real
huggingface_hub client to the local Hub server (tests/hub_server.py)."""

from __future__ import annotations

import numpy as np
import torch
from datasets import Dataset
from huggingface_hub import HfApi, ModelCard
from transformers import TrainingArguments

import hf_variants
from hf_variants.hub import DatasetInfo
from hf_variants.hub.trainer import CheckpointSafeTrainer
from tests.common.hub_server import hub  # noqa: F401  (fixture)

REPO = "org/bert-pushed-by-trainer"


def accuracy(prediction) -> dict:
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


def tiny_trainer(output_dir) -> CheckpointSafeTrainer:
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 99, size=(96, 10))
    data = Dataset.from_dict({"input_ids": ids.tolist(), "labels": (ids == 7).any(1).astype(int).tolist()})
    config = hf_variants.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99, num_labels=2
    )
    torch.manual_seed(0)
    args = TrainingArguments(
        str(output_dir),
        max_steps=8,
        logging_steps=2,
        eval_strategy="steps",
        eval_steps=4,
        per_device_train_batch_size=16,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        hub_model_id=REPO,
    )
    return CheckpointSafeTrainer(
        hf_variants.BertForSequenceClassification(config),
        args,
        train_dataset=data.select(range(64)),
        eval_dataset=data.select(range(64, 96)),
        compute_metrics=accuracy,
    )


def test_trainer_push_to_hub_publishes_our_card(hub, tmp_path):
    trainer = tiny_trainer(tmp_path / "run")
    trainer.train()
    metrics = trainer.evaluate()
    dataset = DatasetInfo(
        name="token-presence sequences", id="local/token-presence", num_train_examples=64, num_eval_examples=32
    )
    trainer.push_to_hub(dataset=dataset, finetuned_from="bert-tiny")

    card = ModelCard.load(REPO)
    assert card.content == (tmp_path / "run" / "README.md").read_text()
    results = {result.metric_type: result.metric_value for result in card.data.eval_results}
    assert results["accuracy"] == metrics["eval_accuracy"]
    assert card.data.eval_results[0].dataset_name == "token-presence sequences"
    assert "training_curves.png" in card.content and "built with hf-variants" in card.content
    assert "More information needed" not in card.content  # transformers' default card's placeholder
    files = HfApi().list_repo_files(REPO)
    assert {"training_curves.png", "model.safetensors", "config.json", "README.md"} <= set(files)
    assert hub.count("POST", "/api/validate-yaml") >= 1  # the Hub-side metadata check passed


def test_without_a_dataset_the_card_has_no_metrics_but_is_ours(hub, tmp_path):
    trainer = tiny_trainer(tmp_path / "run")
    trainer.train()
    trainer.push_to_hub()
    card = ModelCard.load(REPO)
    assert not card.data.eval_results
    assert "built with hf-variants" in card.content and "More information needed" not in card.content
