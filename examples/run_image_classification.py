#!/usr/bin/env python
"""Fine-tune (or train from scratch) an hf-variants ViT for image classification: our offline real
data (``--dataset_name hf_variants/fashion_mnist`` or ``hf_variants/digits``), any Hub dataset, or
folders of images (``--train_dir``/``--validation_dir``, one sub-folder per class).

Same arguments as transformers' ``examples/pytorch/image-classification/run_image_classification.py``;
for example, vit-mini from scratch on Fashion-MNIST::

    python examples/run_image_classification.py --model_name_or_path vit-mini \\
        --dataset_name hf_variants/fashion_mnist --do_train --do_eval --do_predict \\
        --output_dir out/vit-fashion-mnist

``--model_name_or_path`` is a ``modeling_configs/`` name (random weights; the image processor is
built from the config: resize to ``image_size``, mean/std 0.5 per channel) or a checkpoint folder
or Hub id (its ``preprocessor_config.json``, or ``--image_processor_name``). An MAE pretraining
folder (``ViTForPreTraining``) loads its encoder and gets a new classifier.

Outputs: the safetensors model, ``preprocessor_config.json``, ``all_results.json``,
``train_results.json``, ``eval_results.json``, ``trainer_state.json``, a model card with the
training curves; with ``--do_predict`` also ``test_results.json``, ``predict_results.txt``
(index, prediction, label) and ``misclassified_test.png`` (a grid of wrongly classified test images).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import datasets
import numpy as np
import PIL.Image
from transformers import (
    AutoModelForImageClassification,
    EvalPrediction,
)

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.metrics import accuracy
from hf_variants.training.images import IMAGE_MODES, collate, image_transform, to_pil
from hf_variants.training.labels import encode_labels, label_names

logger = logging.getLogger("hf_variants.examples")

MISCLASSIFIED_GRID_SIZE = 6  # the grid shows up to 6 x 6 wrongly classified test images


def compute_metrics(prediction: EvalPrediction) -> dict[str, float]:
    logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
    return {"accuracy": accuracy(np.argmax(logits, axis=-1), prediction.label_ids)}


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(support.ImageDataArguments, argv, support.ImageModelArguments)
    # The image column is turned into pixel_values on the fly (with_transform): Trainer must not drop it.
    training_args.remove_unused_columns = False

    raw = support.load_images(data_args, model_args, training_args.seed)
    splits = support.select_splits(raw, data_args, training_args)
    image_column, label_column = data_args.image_column_name, data_args.label_column_name
    for split, dataset in splits.items():
        support.require_columns(
            dataset, [image_column, label_column], f"{split} image classification", image_columns=[image_column]
        )
    reference = splits.get("train") or next(iter(splits.values()))
    names = label_names(reference, label_column)
    if len(names) < 2:
        raise ValueError(f"classification needs at least two classes; {label_column!r} has only {names}")

    model = support.load_model(
        model_args, AutoModelForImageClassification, None, label_names=names, problem_type="single_label_classification"
    )
    if model.config.num_channels not in IMAGE_MODES:
        raise ValueError(f"images can be fed to models with 1 or 3 channels, this one has {model.config.num_channels}")
    image_processor = support.load_image_processor_for(model_args, model.config)
    mode = IMAGE_MODES[model.config.num_channels]

    features: dict[str, datasets.Dataset] = {}
    for split, dataset in splits.items():
        labels = encode_labels(dataset, label_column, dict(model.config.label2id), split)
        dataset = dataset.add_column("labels", labels)
        flip = data_args.horizontal_flip and split == "train"
        features[split] = dataset.with_transform(image_transform(image_processor, image_column, mode, flip))

    trainer = support.build_trainer(model, training_args, features, image_processor, collate, compute_metrics)
    results: dict = {}
    if training_args.do_train:
        results.update(support.train_and_save(trainer, splits["train"], data_args, training_args))
    if training_args.do_eval:
        results.update(support.save_eval_metrics(trainer, trainer.evaluate(), len(splits["validation"])))
    if training_args.do_predict:
        results.update(predict_test_set(trainer, features["test"], splits["test"], image_column, mode))
    return support.finish(trainer, model_args, data_args, "image-classification", results)


def predict_test_set(
    trainer, features: datasets.Dataset, raw_test: datasets.Dataset, image_column: str, mode: str
) -> dict:
    """Test metrics (test_results.json), predict_results.txt and the grid of misclassified images."""
    output = trainer.predict(features, metric_key_prefix="test")
    metrics = support.save_eval_metrics(trainer, output.metrics, len(raw_test), split="test")
    logits = output.predictions[0] if isinstance(output.predictions, tuple) else output.predictions
    predicted, labels = np.argmax(logits, axis=-1), output.label_ids
    id2label = trainer.model.config.id2label
    support.write_lines(
        trainer, "predict_results.txt",
        ["index\tprediction\tlabel"] + [f"{i}\t{id2label[int(p)]}\t{id2label[int(t)]}" for i, (p, t) in enumerate(zip(predicted, labels))],
    )  # fmt: skip
    if trainer.is_world_process_zero():
        wrong = np.flatnonzero(predicted != labels)[: MISCLASSIFIED_GRID_SIZE**2]
        if len(wrong):
            images = [to_pil(raw_test[int(row)][image_column], mode) for row in wrong]
            captions = [f"{id2label[int(labels[row])]}\nas {id2label[int(predicted[row])]}" for row in wrong]
            title = f"Misclassified test images ({int(np.sum(predicted != labels))} of {len(labels)}): true / predicted"
            plot_image_grid(images, captions, Path(trainer.args.output_dir) / "misclassified_test.png", title)
    return metrics


def plot_image_grid(images: list[PIL.Image.Image], captions: list[str], path: Path, title: str) -> Path | None:
    """Save up to MISCLASSIFIED_GRID_SIZE^2 images in a square grid, each with its caption (None,
    with a warning, when matplotlib, the ``plot`` extra, is not installed)."""
    try:
        import matplotlib
    except ImportError:
        logger.warning("matplotlib is not installed (pip install 'hf-variants[plot]'): no misclassified_test.png")
        return None

    matplotlib.use("Agg")  # files only: works without a display
    import matplotlib.pyplot as plt

    columns = min(MISCLASSIFIED_GRID_SIZE, len(images))
    rows = -(-len(images) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(1.6 * columns, 1.9 * rows + 0.4), squeeze=False)
    for axis in axes.flat:
        axis.axis("off")
    for axis, image, caption in zip(axes.flat, images, captions):
        axis.imshow(image, cmap="gray" if image.mode == "L" else None, vmin=0, vmax=255)
        axis.set_title(caption, fontsize=7)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


if __name__ == "__main__":
    main()
