"""The config classes every shipped variant's config subclasses: the shared blocks' architecture
configs (``hf_variants/modules/configuration.py``) plus reading a checkpoint of the variant's
family in transformers' format.

``BertConfig.from_pretrained(<a folder saved by transformers' BertModel>)`` translates its
config.json (``model_type "bert"``) into ours instead of keeping ``model_type="bert"`` on an
hf-variants config, and refuses unrelated model types (:class:`CheckpointConfigMixin`, through
``hf_variants.conversion.loading`` and the variant's key map). The blocks' configs do not do this
themselves: ``modules/`` knows nothing of checkpoints or conversion.

Pick the one matching the backbone: :class:`VariantConfig` for encoders,
:class:`VariantDecoderConfig` for decoder-only models, :class:`VariantEncoderDecoderConfig` for
encoder-decoders.

The remote-code export inlines this module into a checkpoint's ``configuration_<v>.py``, so it
imports only the blocks at import time and loads the conversion code by name (which the export,
following imports, leaves out); in such a copy (module name not under ``hf_variants.``) the hook steps aside.
"""

from __future__ import annotations

import importlib

from huggingface_hub.dataclasses import strict

from ..modules.configuration import DecoderConfig, EncoderDecoderConfig, TransformerConfig


class CheckpointConfigMixin:
    """First in a config class's bases: ``from_pretrained`` / ``get_config_dict`` read a transformers
    config.json of the variant's family as ours."""

    @classmethod
    def get_config_dict(cls, pretrained_model_name_or_path, **kwargs):
        config_dict, kwargs = super().get_config_dict(pretrained_model_name_or_path, **kwargs)
        if __name__.startswith("hf_variants."):
            loading = importlib.import_module("hf_variants.conversion.loading")
            config_dict = loading.translate_config_dict(cls, config_dict, pretrained_model_name_or_path)
        return config_dict, kwargs


@strict
class VariantConfig(CheckpointConfigMixin, TransformerConfig):
    """:class:`TransformerConfig` that reads its family's transformers config.json."""


@strict
class VariantDecoderConfig(CheckpointConfigMixin, DecoderConfig):
    """:class:`DecoderConfig` that reads its family's transformers config.json."""


@strict
class VariantEncoderDecoderConfig(CheckpointConfigMixin, EncoderDecoderConfig):
    """:class:`EncoderDecoderConfig` that reads its family's transformers config.json."""
