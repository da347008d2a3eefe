#!/usr/bin/env python
"""MAE pretraining (He et al. 2022) of an hf-variants ViT on unlabelled images: ``ViTForPreTraining``
masks ``--mask_ratio`` of the patches, encodes the visible ones and reconstructs the rest.

Same arguments as transformers' ``examples/pytorch/image-pretraining/run_mae.py`` (``--mask_ratio``,
``--norm_pix_loss``, ``--base_learning_rate``, ``--image_column_name``, ``--train_dir`` ...); the
data sources are those of ``run_image_classification.py`` (labels, if any, are ignored). The saved
folder fine-tunes with ``run_image_classification.py --model_name_or_path <folder>`` (the encoder's
``vit.*`` weights load, the classifier starts fresh)::

    python examples/run_mae.py --model_name_or_path vit-mini --dataset_name hf_variants/fashion_mnist \\
        --do_train --do_eval --output_dir out/vit-mini-mae
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from transformers import AutoModelForPreTraining, TrainingArguments

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.training.images import IMAGE_MODES, collate, image_transform

# transformers' run_mae.py scales the learning rate with the batch: lr = base_lr * total batch / 256.
LEARNING_RATE_REFERENCE_BATCH = 256


@dataclass
class MAEModelArguments(support.ImageModelArguments):
    mask_ratio: float = field(default=0.75, metadata={"help": "Fraction of the patches masked (removed) per image."})
    norm_pix_loss: bool = field(
        default=True, metadata={"help": "Reconstruct pixels normalised per patch (the paper's best)."}
    )


@dataclass
class MAETrainingArguments(TrainingArguments, support.TimeBudgetArguments):
    base_learning_rate: float | None = field(
        default=1e-3, metadata={"help": "Learning rate per 256 images: lr = base_learning_rate * total batch / 256."}
    )


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(
        support.ImageDataArguments, argv, MAEModelArguments, MAETrainingArguments
    )
    if not 0 < model_args.mask_ratio < 1:
        raise ValueError(f"--mask_ratio must be in (0, 1), got {model_args.mask_ratio}")
    training_args.remove_unused_columns = False  # images become pixel_values on the fly
    if not training_args.label_names:
        training_args.label_names = ["pixel_values"]  # the images are the targets: Trainer then reports eval_loss
    if training_args.base_learning_rate is not None:
        total_batch = (
            training_args.train_batch_size * training_args.gradient_accumulation_steps * training_args.world_size
        )
        training_args.learning_rate = training_args.base_learning_rate * total_batch / LEARNING_RATE_REFERENCE_BATCH

    raw = support.load_images(data_args, model_args, training_args.seed)
    splits = support.select_splits(raw, data_args, training_args)
    for split, dataset in splits.items():
        support.require_columns(
            dataset,
            [data_args.image_column_name],
            f"{split} MAE pretraining",
            image_columns=[data_args.image_column_name],
        )

    # A named config (random weights, --config_overrides allowed), a local folder or a Hub id.
    model = support.load_model(
        model_args,
        AutoModelForPreTraining,
        None,
        mask_ratio=model_args.mask_ratio,
        norm_pix_loss=model_args.norm_pix_loss,
    )
    if model.config.num_channels not in IMAGE_MODES:
        raise ValueError(f"images can be fed to models with 1 or 3 channels, this one has {model.config.num_channels}")
    image_processor = support.load_image_processor_for(model_args, model.config)
    mode = IMAGE_MODES[model.config.num_channels]
    # Only the images: a label column, if the data has one, is dropped.
    features = {
        split: dataset.select_columns([data_args.image_column_name]).with_transform(
            image_transform(
                image_processor, data_args.image_column_name, mode, flip=data_args.horizontal_flip and split == "train"
            )
        )
        for split, dataset in splits.items()
    }
    trainer = support.build_trainer(model, training_args, features, image_processor, collate)
    results = support.train_and_evaluate(trainer, splits, data_args, training_args)
    return support.finish(trainer, model_args, data_args, "mae-pretraining", results)


if __name__ == "__main__":
    main()
