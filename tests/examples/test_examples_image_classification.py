"""examples/run_image_classification.py on real images: vit-mini from scratch on a Fashion-MNIST
subset (the loss falls, validation accuracy is well above chance, every output is written and the
saved folder works in pipeline("image-classification")), then fine-tuning that checkpoint folder on
scikit-learn's digits given as folders of PNG files (--train_dir / --validation_dir), and the
errors for bad arguments.

Test-sized: a few hundred images seen several times, on one thread (two threads on a shared,
loaded 2-core machine spend their time waiting on each other). The README's run on the full data
measures how well the model generalises.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from test_examples_processing import load_script
from test_examples_training import assert_loss_falls, logged_losses, read_json
from transformers import pipeline

from hf_variants.data import load_named_dataset
from hf_variants.data.images import FASHION_MNIST_LABELS

script = load_script("run_image_classification")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def run_args(output_dir: Path, *, epochs: int, batch: int, learning_rate: str = "2e-3") -> list[str]:
    return ["--num_train_epochs", str(epochs), "--per_device_train_batch_size", str(batch), "--per_device_eval_batch_size", "100",
            "--learning_rate", learning_rate, "--warmup_steps", "5", "--logging_steps", "2", "--save_strategy", "no",
            "--seed", "0", "--use_cpu", "--report_to", "none", "--disable_tqdm", "true", "--output_dir", str(output_dir)]  # fmt: skip


@pytest.fixture(scope="module")
def fashion_run(tmp_path_factory) -> Path:
    output_dir = tmp_path_factory.mktemp("vit-fashion") / "out"
    script.main(
        ["--model_name_or_path", "vit-mini", "--dataset_name", "hf_variants/fashion_mnist", "--do_train", "--do_eval",
         "--do_predict", "--horizontal_flip", "--max_train_samples", "512", "--max_eval_samples", "200",
         "--max_predict_samples", "100"] + run_args(output_dir, epochs=10, batch=64)
    )  # fmt: skip
    return output_dir


@pytest.mark.slow
def test_vit_mini_from_scratch_on_fashion_mnist(fashion_run):
    assert_loss_falls(fashion_run)
    for name in (
        "model.safetensors",
        "config.json",
        "preprocessor_config.json",
        "all_results.json",
        "train_results.json",
        "eval_results.json",
        "test_results.json",
        "trainer_state.json",
        "README.md",
        "training_curves.png",
    ):
        assert (fashion_run / name).is_file(), name  # fmt: skip
    config = read_json(fashion_run / "config.json")
    assert config["model_type"] == "hfv_vit" and config["architectures"] == ["ViTForImageClassification"]
    assert [config["id2label"][str(i)] for i in range(10)] == FASHION_MNIST_LABELS
    with safe_open(fashion_run / "model.safetensors", "pt") as weights:
        assert weights.get_tensor("classifier.weight").shape == (10, 64)
    results = read_json(fashion_run / "all_results.json")
    assert results["train_samples"] == 512 and results["eval_samples"] == 200 and results["test_samples"] == 100
    # Ten classes: chance is 0.1. A few hundred images already separate trousers, bags, shoes ...
    assert results["eval_accuracy"] > 0.35, results
    assert f"{results['eval_accuracy']:.4f}"[:4] in (fashion_run / "README.md").read_text(encoding="utf-8")

    lines = (fashion_run / "predict_results.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "index\tprediction\tlabel" and len(lines) == 101
    rows = [line.split("\t") for line in lines[1:]]
    test_labels = load_named_dataset("hf_variants/fashion_mnist")["test"].select(range(100))["label"]
    assert [row[2] for row in rows] == [FASHION_MNIST_LABELS[label] for label in test_labels]
    correct = sum(row[1] == row[2] for row in rows)
    assert correct / 100 == pytest.approx(results["test_accuracy"])
    assert (fashion_run / "misclassified_test.png").is_file() == (correct < 100)

    # The saved folder is a complete image-classification checkpoint: pipeline() on it, offline.
    # (pipeline converts PIL images to RGB, so a 1-channel model gets (H, W, 1) arrays.)
    image = np.asarray(load_named_dataset("hf_variants/fashion_mnist")["test"][0]["image"])[..., None]
    scores = pipeline("image-classification", model=str(fashion_run), device="cpu")(image, top_k=10)
    assert sorted(score["label"] for score in scores) == sorted(FASHION_MNIST_LABELS)
    assert sum(score["score"] for score in scores) == pytest.approx(1.0, abs=1e-4)


def write_image_folder(root: Path, dataset, per_class: int) -> Path:
    """``root/<class name>/<id>.png``: the layout transformers' imagefolder loader reads."""
    names = dataset.features["label"].names
    counts = dict.fromkeys(range(len(names)), 0)
    for row in dataset:
        if counts[row["label"]] < per_class:
            counts[row["label"]] += 1
            (root / names[row["label"]]).mkdir(parents=True, exist_ok=True)
            row["image"].save(root / names[row["label"]] / f"{row['id']}.png")
    return root


@pytest.mark.slow
def test_fine_tune_checkpoint_folder_on_digit_image_folders(fashion_run, tmp_path):
    digits = load_named_dataset("hf_variants/digits")
    train_dir = write_image_folder(tmp_path / "train", digits["train"], per_class=20)
    validation_dir = write_image_folder(tmp_path / "validation", digits["validation"], per_class=10)
    output_dir = tmp_path / "out"
    script.main(
        ["--model_name_or_path", str(fashion_run), "--train_dir", str(train_dir), "--validation_dir", str(validation_dir),
         "--do_train", "--do_eval"] + run_args(output_dir, epochs=8, batch=40)
    )  # fmt: skip
    assert_loss_falls(output_dir)
    config = read_json(output_dir / "config.json")
    # The data's own labels (digit folder names) replace the checkpoint's clothing names.
    assert sorted(config["id2label"].values()) == [str(digit) for digit in range(10)]
    assert read_json(output_dir / "preprocessor_config.json") == read_json(fashion_run / "preprocessor_config.json")
    results = read_json(output_dir / "all_results.json")
    assert results["train_samples"] == 200 and results["eval_samples"] == 100
    card = (output_dir / "README.md").read_text(encoding="utf-8")
    assert str(fashion_run) in card  # the base model
    assert "train, validation" in card  # the data, named by its folders


def test_bad_arguments_raise_clear_errors(tmp_path):
    common = ["--model_name_or_path", "vit-mini", "--do_train", "--output_dir", str(tmp_path / "out")]
    with pytest.raises(ValueError, match=r"train_val_split must be in \[0, 1\)"):
        script.main(common + ["--dataset_name", "hf_variants/digits", "--train_val_split", "1.5"])
    with pytest.raises(ValueError, match="is not a directory"):
        script.main(common + ["--train_dir", str(tmp_path / "missing")])
    with pytest.raises(ValueError, match=r"needs columns \['img', 'label'\].*missing: \['img'\]"):
        script.main(common + ["--dataset_name", "hf_variants/digits", "--image_column_name", "img"])
    with pytest.raises(ValueError, match="got float64"):
        script.to_pil(np.zeros((4, 4)), "L")
    assert script.to_pil(np.full((4, 4, 1), 7, dtype=np.int64), "RGB").getpixel((0, 0)) == (7, 7, 7)
    with pytest.raises(ValueError, match="patch_sise"):  # a misspelt --config_overrides key is named
        script.main(common + ["--dataset_name", "hf_variants/digits", "--config_overrides", "patch_sise=7"])


def test_config_overrides_change_a_named_config_and_are_refused_for_checkpoints(tmp_path):
    from transformers import AutoModelForImageClassification

    import examples_support as support

    arguments = support.ModelArguments(model_name_or_path="vit-mini", config_overrides="patch_size=7,encoder_stride=7")
    model = support.load_model(
        arguments, AutoModelForImageClassification, None, label_names=[str(i) for i in range(10)]
    )
    assert model.config.patch_size == 7 and model.config.encoder_stride == 7
    assert model.vit.embeddings.patch_embeddings.projection.kernel_size == (7, 7)
    assert model.vit.embeddings.position_embeddings.shape[1] == 1 + (28 // 7) ** 2  # CLS + 4 x 4 patches
    model.save_pretrained(tmp_path / "checkpoint")
    arguments = support.ModelArguments(model_name_or_path=str(tmp_path / "checkpoint"), config_overrides="patch_size=4")
    with pytest.raises(ValueError, match="is a checkpoint"):
        support.load_model(arguments, AutoModelForImageClassification, None)


@pytest.mark.slow
def test_mae_pretraining_then_fine_tuning_loads_the_encoder(tmp_path):
    mae_dir = tmp_path / "mae"
    load_script("run_mae").main(
        ["--model_name_or_path", "vit-mini", "--dataset_name", "hf_variants/fashion_mnist", "--do_train", "--do_eval",
         "--max_train_samples", "256", "--max_eval_samples", "100", "--base_learning_rate", "0.02", "--mask_ratio", "0.6"]
        + run_args(mae_dir, epochs=5, batch=32)
    )  # fmt: skip
    losses = logged_losses(mae_dir)
    assert sum(losses[-4:]) / 4 < 0.95 * sum(losses[:4]) / 4, losses  # the reconstruction improves
    config = read_json(mae_dir / "config.json")
    assert config["architectures"] == ["ViTForPreTraining"] and config["mask_ratio"] == 0.6
    results = read_json(mae_dir / "all_results.json")
    assert results["train_samples"] == 256 and results["eval_samples"] == 100 and results["eval_loss"] > 0
    # transformers' rule: lr = base_learning_rate * batch / 256 (the peak, reached after warm-up).
    peak = max(
        entry["learning_rate"]
        for entry in read_json(mae_dir / "trainer_state.json")["log_history"]
        if "learning_rate" in entry
    )
    assert 0.9 * 0.02 * 32 / 256 < peak <= 0.02 * 32 / 256

    # Fine-tuning from the MAE folder starts from its encoder: with a zero learning rate the saved
    # classifier's encoder is the pretrained one, weight for weight.
    tuned_dir = tmp_path / "tuned"
    script.main(
        ["--model_name_or_path", str(mae_dir), "--dataset_name", "hf_variants/fashion_mnist", "--do_train",
         "--max_train_samples", "32", "--max_steps", "1"] + run_args(tuned_dir, epochs=1, batch=32, learning_rate="0")
    )  # fmt: skip
    with (
        safe_open(mae_dir / "model.safetensors", "pt") as pretrained,
        safe_open(tuned_dir / "model.safetensors", "pt") as tuned,
    ):
        encoder_keys = [key for key in pretrained.keys() if key.startswith("vit.")]
        assert encoder_keys and set(encoder_keys) <= set(tuned.keys())
        for key in encoder_keys:
            assert torch.equal(pretrained.get_tensor(key), tuned.get_tensor(key)), key
        assert not any(key.startswith("decoder.") for key in tuned.keys())
