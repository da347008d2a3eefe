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
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a source checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples_support

import datasets  # noqa: E402
import PIL.Image  # noqa: E402
from transformers import (  # noqa: E402
    AutoImageProcessor,
    AutoModelForImageClassification,
    EvalPrediction,
    PretrainedConfig,
    ViTImageProcessor,
)

import examples_support as support  # noqa: E402  (examples/examples_support.py)
from hf_variants.models.named_configs import is_named_config  # noqa: E402
from hf_variants.metrics import accuracy  # noqa: E402

logger = logging.getLogger("hf_variants.examples")

IMAGE_MODES = {1: "L", 3: "RGB"}  # the model's num_channels -> the PIL mode its inputs are converted to
MISCLASSIFIED_GRID_SIZE = 6  # the grid shows up to 6 x 6 wrongly classified test images


@dataclass
class ImageModelArguments(support.ModelArguments):
    image_processor_name: str | None = field(
        default=None, metadata={"help": "Image processor name or path, if not the checkpoint's own."}
    )


@dataclass
class ImageDataArguments(support.DataArguments):
    train_dir: str | None = field(default=None, metadata={"help": "A folder of training images, one sub-folder per class."})
    validation_dir: str | None = field(default=None, metadata={"help": "A folder of evaluation images, one sub-folder per class."})
    train_val_split: float = field(
        default=0.15, metadata={"help": "Fraction of train held out for evaluation when the data has no validation split."}
    )
    image_column_name: str = field(default="image", metadata={"help": "The column holding the images (PIL or uint8 arrays)."})
    label_column_name: str = field(default="label", metadata={"help": "The column holding the labels."})
    horizontal_flip: bool = field(
        default=False, metadata={"help": "Mirror each training image with probability 0.5 (not for digits or text)."}
    )

    def __post_init__(self) -> None:
        if not 0 <= self.train_val_split < 1:
            raise ValueError(f"--train_val_split must be in [0, 1), got {self.train_val_split}")
        folders = [path for path in (self.train_dir, self.validation_dir) if path is not None]
        for path in folders:
            if not Path(path).is_dir():
                raise ValueError(f"{path} is not a directory (--train_dir / --validation_dir take folders of images)")
        if folders and (self.dataset_name or self.train_file or self.validation_file or self.test_file):
            raise ValueError("give either --dataset_name / --*_file or --train_dir / --validation_dir, not both")
        if not folders:
            super().__post_init__()


def load_images(data_args: ImageDataArguments, model_args: ImageModelArguments, seed: int) -> datasets.DatasetDict:
    """The raw splits; a validation split is cut from train (``--train_val_split``) when there is none."""
    if data_args.train_dir or data_args.validation_dir:
        folders = {"train": data_args.train_dir, "validation": data_args.validation_dir}
        raw = datasets.load_dataset(
            "imagefolder", data_files={split: str(Path(path) / "**") for split, path in folders.items() if path},
            cache_dir=model_args.cache_dir,
        )
    else:
        raw = support.load_raw_datasets(data_args, model_args)
    if "validation" not in raw and "train" in raw and data_args.train_val_split > 0:
        parts = raw["train"].train_test_split(test_size=data_args.train_val_split, seed=seed)
        raw["train"], raw["validation"] = parts["train"], parts["test"]
    return raw


def default_image_processor(config: PretrainedConfig) -> ViTImageProcessor:
    """For a model trained from scratch: resize to the config's image size, scale to [0, 1], then
    (x - 0.5) / 0.5 per channel."""
    channels = config.num_channels
    return ViTImageProcessor(
        size={"height": config.image_size, "width": config.image_size}, image_mean=[0.5] * channels, image_std=[0.5] * channels
    )


def load_image_processor(model_args: ImageModelArguments, config: PretrainedConfig):
    source = model_args.image_processor_name or model_args.model_name_or_path
    if is_named_config(source):
        return default_image_processor(config)
    if Path(source).is_dir() and not (Path(source) / "preprocessor_config.json").is_file():
        logger.warning("%s has no preprocessor_config.json: using the default processor for its config", source)
        return default_image_processor(config)
    return AutoImageProcessor.from_pretrained(
        source, cache_dir=model_args.cache_dir, revision=model_args.model_revision, token=model_args.token
    )


def to_pil(image, mode: str) -> PIL.Image.Image:
    """A PIL image, or a (H, W) / (H, W, C) array of 0..255 integers, converted to ``mode``."""
    if not isinstance(image, PIL.Image.Image):
        array = np.asarray(image)
        if array.ndim not in (2, 3) or not np.issubdtype(array.dtype, np.integer) or array.min() < 0 or array.max() > 255:
            raise ValueError(
                f"expected a PIL image or a (H, W[, C]) array of integers 0..255, got {array.dtype} of shape {array.shape}"
            )
        if array.ndim == 3 and array.shape[-1] == 1:
            array = array[..., 0]  # PIL has no (H, W, 1) images
        image = PIL.Image.fromarray(array.astype(np.uint8))
    return image if image.mode == mode else image.convert(mode)


def image_transform(image_processor, image_column: str, mode: str, flip: bool):
    """Batch transform for ``Dataset.with_transform``: images -> ``pixel_values`` (B, C, H, W)."""

    def transform(batch: dict) -> dict:
        images = [to_pil(image, mode) for image in batch[image_column]]
        if flip:
            mirrored = torch.rand(len(images)) < 0.5  # torch's generator: seeded by Trainer, distinct per worker
            images = [image.transpose(PIL.Image.Transpose.FLIP_LEFT_RIGHT) if m else image for image, m in zip(images, mirrored)]
        out = {"pixel_values": image_processor(images, return_tensors="pt")["pixel_values"]}
        if "labels" in batch:
            out["labels"] = batch["labels"]
        return out

    return transform


def collate(examples: list[dict]) -> dict[str, torch.Tensor]:
    batch = {"pixel_values": torch.stack([example["pixel_values"] for example in examples])}
    if "labels" in examples[0]:
        batch["labels"] = torch.tensor([example["labels"] for example in examples])
    return batch


def compute_metrics(prediction: EvalPrediction) -> dict[str, float]:
    logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
    return {"accuracy": accuracy(np.argmax(logits, axis=-1), prediction.label_ids)}


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(ImageDataArguments, argv, ImageModelArguments)
    # The image column is turned into pixel_values on the fly (with_transform): Trainer must not drop it.
    training_args.remove_unused_columns = False

    raw = load_images(data_args, model_args, training_args.seed)
    splits = support.select_splits(raw, data_args, training_args)
    image_column, label_column = data_args.image_column_name, data_args.label_column_name
    for split, dataset in splits.items():
        support.require_columns(dataset, [image_column, label_column], f"{split} image classification", image_columns=[image_column])
    reference = splits.get("train") or next(iter(splits.values()))
    names = support.label_names(reference, label_column)
    if len(names) < 2:
        raise ValueError(f"classification needs at least two classes; {label_column!r} has only {names}")

    model = support.load_model(
        model_args, AutoModelForImageClassification, None, label_names=names, problem_type="single_label_classification"
    )
    if model.config.num_channels not in IMAGE_MODES:
        raise ValueError(f"images can be fed to models with 1 or 3 channels, this one has {model.config.num_channels}")
    image_processor = load_image_processor(model_args, model.config)
    mode = IMAGE_MODES[model.config.num_channels]

    features: dict[str, datasets.Dataset] = {}
    for split, dataset in splits.items():
        labels = support.encode_labels(dataset, label_column, dict(model.config.label2id), split)
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


def predict_test_set(trainer, features: datasets.Dataset, raw_test: datasets.Dataset, image_column: str, mode: str) -> dict:
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
