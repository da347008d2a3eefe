"""Image inputs of the vision scripts (examples/run_image_classification.py, run_mae.py): the image
processor of a model trained from scratch or of a checkpoint, PIL conversion, the batch transform
to ``pixel_values`` and the collator."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import PIL.Image
import torch
from transformers import AutoImageProcessor, PretrainedConfig, ViTImageProcessor

from hf_variants.models.named_configs import is_named_config

logger = logging.getLogger("hf_variants.examples")

IMAGE_MODES = {1: "L", 3: "RGB"}  # the model's num_channels -> the PIL mode its inputs are converted to


def default_image_processor(config: PretrainedConfig) -> ViTImageProcessor:
    """For a model trained from scratch: resize to the config's image size, scale to [0, 1], then
    (x - 0.5) / 0.5 per channel."""
    channels = config.num_channels
    return ViTImageProcessor(
        size={"height": config.image_size, "width": config.image_size},
        image_mean=[0.5] * channels,
        image_std=[0.5] * channels,
    )


def load_image_processor(source: str, config: PretrainedConfig, **hub_options):
    """The processor of ``source`` (``--image_processor_name`` or the model's name or folder): the
    default one for a ``modeling_configs/`` name or a folder without preprocessor_config.json, else
    ``AutoImageProcessor.from_pretrained(source, **hub_options)``."""
    if is_named_config(source):
        return default_image_processor(config)
    if Path(source).is_dir() and not (Path(source) / "preprocessor_config.json").is_file():
        logger.warning("%s has no preprocessor_config.json: using the default processor for its config", source)
        return default_image_processor(config)
    return AutoImageProcessor.from_pretrained(source, **hub_options)


def to_pil(image, mode: str) -> PIL.Image.Image:
    """A PIL image, or a (H, W) / (H, W, C) array of 0..255 integers, converted to ``mode``."""
    if not isinstance(image, PIL.Image.Image):
        array = np.asarray(image)
        if (
            array.ndim not in (2, 3)
            or not np.issubdtype(array.dtype, np.integer)
            or array.min() < 0
            or array.max() > 255
        ):
            raise ValueError(
                f"expected a PIL image or a (H, W[, C]) array of integers 0..255, got {array.dtype} of shape {array.shape}"
            )
        if array.ndim == 3 and array.shape[-1] == 1:
            array = array[..., 0]  # PIL has no (H, W, 1) images
        image = PIL.Image.fromarray(array.astype(np.uint8))
    return image if image.mode == mode else image.convert(mode)


def image_transform(image_processor, image_column: str, mode: str, flip: bool) -> Callable[[dict], dict]:
    """Batch transform for ``Dataset.with_transform``: images -> ``pixel_values`` (B, C, H, W)."""

    def transform(batch: dict) -> dict:
        images = [to_pil(image, mode) for image in batch[image_column]]
        if flip:
            mirrored = torch.rand(len(images)) < 0.5  # torch's generator: seeded by Trainer, distinct per worker
            images = [
                image.transpose(PIL.Image.Transpose.FLIP_LEFT_RIGHT) if m else image
                for image, m in zip(images, mirrored)
            ]
        out = {"pixel_values": image_processor(images, return_tensors="pt")["pixel_values"]}
        if "labels" in batch:
            out["labels"] = batch["labels"]
        return out

    return transform


def collate(examples: list[dict]) -> dict[str, torch.Tensor]:
    """Stack the examples' ``pixel_values`` (C, H, W) into (B, C, H, W), and their labels into (B,)."""
    batch = {"pixel_values": torch.stack([example["pixel_values"] for example in examples])}
    if "labels" in examples[0]:
        batch["labels"] = torch.tensor([example["labels"] for example in examples])
    return batch
