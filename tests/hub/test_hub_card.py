"""Model cards from a real (tiny) Trainer run: metadata, model-index, body, plot, rebuild, round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from datasets import Dataset
from huggingface_hub import ModelCard
from transformers import Trainer, TrainingArguments

import hf_variants
from hf_variants.cli import main as cli_main
from hf_variants.hub import DatasetInfo, build_model_card, push_model_dir, variant_info, variant_name, write_model_card
from hf_variants.hub.card import metric_items
from hf_variants.models import papers
from tests.common.hub_server import hub  # noqa: F401  (fixture)
from tests.common.hub_store import parse_front_matter, validate_model_index

DATASET = DatasetInfo(
    name="synthetic token-presence sequences",
    id="local/token-presence",
    config="tok7",
    split="validation",
    num_train_examples=192,
    num_eval_examples=64,
    source="generated in the test with numpy (seed 0)",
)


def accuracy(prediction) -> dict:
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A 16-step Trainer run of our tiny BERT classifier (label: does token 7 occur?), saved like the examples."""
    out = tmp_path_factory.mktemp("card-run") / "bert-token-presence"
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 99, size=(256, 12))
    data = Dataset.from_dict({"input_ids": ids.tolist(), "labels": (ids == 7).any(1).astype(int).tolist()})
    config = hf_variants.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99, num_labels=2
    )
    torch.manual_seed(0)
    args = TrainingArguments(
        str(out),
        max_steps=16,
        logging_steps=4,
        eval_strategy="steps",
        eval_steps=8,
        per_device_train_batch_size=16,
        learning_rate=1e-3,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(
        hf_variants.BertForSequenceClassification(config),
        args,
        train_dataset=data.select(range(192)),
        eval_dataset=data.select(range(192, 256)),
        compute_metrics=accuracy,
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only add contention on shared CI cores
    try:
        trainer.train()
        metrics = trainer.evaluate()
    finally:
        torch.set_num_threads(threads)
    trainer.save_model()
    trainer.save_state()
    trainer.save_metrics("eval", metrics)
    card = write_model_card(
        out,
        trainer_state=trainer.state,
        eval_results=metrics,
        training_args=trainer.args,
        dataset=DATASET,
        objective="text-classification",
        repo_id="org/bert-token-presence",
    )
    return out, metrics, trainer.state, card


def test_card_metadata_and_model_index_hold_the_run_metrics(trained_run):
    out, metrics, _, card = trained_run
    data = card.data
    assert data.library_name == "transformers" and data.license == "apache-2.0"
    assert {"hf-variants", "bert", "text-classification"} <= set(data.tags)
    assert data.datasets == ["local/token-presence"] and data.pipeline_tag == "text-classification"
    written = {(r.metric_type, r.metric_value) for r in data.eval_results}
    assert written == {("accuracy", metrics["eval_accuracy"]), ("loss", metrics["eval_loss"])}
    for result in data.eval_results:
        assert (result.task_type, result.dataset_type, result.dataset_name) == (
            "text-classification",
            DATASET.id,
            DATASET.name,
        )
        assert (result.dataset_config, result.dataset_split) == ("tok7", "validation")

    metadata = parse_front_matter((out / "README.md").read_text())
    assert validate_model_index(metadata) == []  # the Hub's model-index schema
    reloaded = ModelCard.load(out / "README.md")  # round trip through the file
    assert {(r.metric_type, r.metric_value) for r in reloaded.data.eval_results} == written
    assert reloaded.data.model_name == "bert-token-presence"


def test_card_body_describes_variant_training_loading_and_evaluation(trained_run):
    out, metrics, state, _ = trained_run
    text = (out / "README.md").read_text()
    assert papers.BERT.description in text and "https://arxiv.org/abs/1810.04805" in text
    assert "@inproceedings{devlin-etal-2019-bert" in text
    assert 'from_pretrained("org/bert-token-presence", trust_remote_code=True)' in text
    assert "import hf_variants" in text and "AutoModelForSequenceClassification" in text
    assert f"**Optimizer steps:** {state.global_step}" in text and state.global_step == 16
    assert "| learning_rate | 0.001 |" in text and "| per_device_train_batch_size | 16 |" in text
    assert f"| local/token-presence | tok7 | validation | accuracy | {metrics['eval_accuracy']:.4f} |" in text
    assert "**Wall time:**" in text and "**Hardware:**" in text
    assert "## Limitations" in text and "192 examples" in text
    assert "![Training loss and evaluation metrics against step](training_curves.png)" in text

    import matplotlib.image

    image = matplotlib.image.imread(out / "training_curves.png")
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 400
    assert image.std() > 0.01  # something was drawn


def test_card_rebuilds_identically_from_saved_run_files(trained_run):
    out, _, _, _ = trained_run
    original = (out / "README.md").read_text()
    (out / "README.md").unlink()
    (out / "training_curves.png").unlink()
    assert cli_main(["card", str(out)]) == 0
    assert (out / "README.md").read_text() == original
    assert (out / "training_curves.png").stat().st_size > 10_000
    assert json.loads((out / "training_args.json").read_text())["learning_rate"] == 1e-3


def test_card_round_trips_through_the_hub(hub, trained_run):
    out, metrics, _, card = trained_run
    push_model_dir(out, "org/bert-token-presence")
    assert hub.count("POST", "/api/validate-yaml") == 1  # the Hub-side metadata check passed
    remote = ModelCard.load("org/bert-token-presence")
    assert remote.data.eval_results == card.data.eval_results
    assert remote.content == (out / "README.md").read_text()
    from huggingface_hub import HfApi

    assert "training_curves.png" in HfApi().list_repo_files("org/bert-token-presence")


def test_fine_tuned_card_names_its_base_model(tmp_path):
    config = {"model_type": "hfv_bert", "architectures": ["BertForTokenClassification"], "hidden_size": 32}
    card = build_model_card(
        config,
        model_name="ner",
        base_model="org/bert-mini",
        eval_results={"eval_f1": 0.5, "eval_runtime": 2.0},
        dataset=DATASET,
    )
    assert card.data.base_model == "org/bert-mini"
    assert [(r.task_type, r.metric_type) for r in card.data.eval_results] == [("token-classification", "f1")]
    assert "fine-tuned from [org/bert-mini]" in card.content


def test_metric_items_keep_quality_metrics_and_reject_non_finite():
    assert metric_items(
        {"eval_accuracy": 0.5, "eval_loss": 0.7, "eval_runtime": 1.0, "epoch": 3.0, "eval_samples_per_second": 9.0}
    ) == [("accuracy", 0.5), ("loss", 0.7)]
    with pytest.raises(ValueError, match="eval_f1"):
        metric_items({"eval_f1": math.nan})


def test_schema_check_rejects_a_broken_model_index():
    broken = {
        "model-index": [
            {
                "name": "m",
                "results": [{"task": {"type": "fill-mask"}, "dataset": {"type": "x"}, "metrics": [{"type": "acc"}]}],
            }
        ]
    }
    errors = validate_model_index(broken)
    assert any("dataset" in e for e in errors) and any("value" in e for e in errors)


def test_bad_card_inputs_raise_value_errors(tmp_path):
    with pytest.raises(ValueError, match="config.json"):
        write_model_card(tmp_path)
    with pytest.raises(ValueError, match="dataset"):
        build_model_card({"model_type": "hfv_bert"}, model_name="m", eval_results={"eval_accuracy": 1.0})
    with pytest.raises(ValueError, match="model_type"):
        build_model_card({}, model_name="m")


@pytest.mark.parametrize("model_type", sorted(hf_variants.registry.SPECS))
def test_paper_descriptions_and_citations(model_type):
    info = hf_variants.registry.SPECS[model_type].paper
    # arXiv where the paper is there; GPT-1/GPT-2 exist only as OpenAI reports.
    assert len(info.description) > 150 and info.paper_url.startswith(
        ("https://arxiv.org/abs/", "https://cdn.openai.com/")
    )
    assert info.bibtex.startswith("@") and "title" in info.bibtex and "year" in info.bibtex


@pytest.mark.parametrize("model_type", sorted(hf_variants.registry.SPECS))
def test_every_registered_variant_has_its_card_text(model_type):
    spec = hf_variants.registry.SPECS[model_type]
    assert variant_name(model_type) == spec.name
    assert variant_info(model_type) is spec.paper
