"""The config classes every shipped variant's config subclasses: the shared blocks' architecture
configs (``hf_variants/modules/configuration.py``) plus reading a checkpoint of the variant's
family in transformers' format.

``BertConfig.from_pretrained(<a folder saved by transformers' BertModel>)`` translates its
config.json (``model_type "bert"``) into ours and refuses unrelated model types
(:class:`~hf_variants.conversion.hooks.CheckpointConfigMixin`). The blocks' configs do not do this
themselves: ``modules/`` knows nothing of checkpoints or conversion.

Pick the one matching the backbone: :class:`VariantConfig` for encoders,
:class:`VariantDecoderConfig` for decoder-only models, :class:`VariantEncoderDecoderConfig` for
encoder-decoders.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..conversion.hooks import CheckpointConfigMixin
from ..modules.configuration import DecoderConfig, EncoderDecoderConfig, TransformerConfig


@strict
class VariantConfig(CheckpointConfigMixin, TransformerConfig):
    """:class:`TransformerConfig` that reads its family's transformers config.json."""


@strict
class VariantDecoderConfig(CheckpointConfigMixin, DecoderConfig):
    """:class:`DecoderConfig` that reads its family's transformers config.json."""


@strict
class VariantEncoderDecoderConfig(CheckpointConfigMixin, EncoderDecoderConfig):
    """:class:`EncoderDecoderConfig` that reads its family's transformers config.json."""
