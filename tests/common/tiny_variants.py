"""Tiny configs and inputs for every registered variant and head (the shared tests' fixtures).

Each variant's ``SPEC.mini_config`` named config, shrunk by its entry in :data:`TINY_CONFIGS`
(hidden 32, 2 layers, vocab 99, no dropout, ...). The sizes are the tests' own, so they live here
and not in the variant's SPEC; a variant added without an entry fails
``tests/models/test_variant_folders.py``.
"""

from __future__ import annotations

import json

import torch

from hf_variants.models.named_configs import named_config_path
from hf_variants.registry import SPECS, VariantSpec

# The sizes every variant's tiny test config starts from: the shared tests build each head at these
# sizes, without dropout, so outputs compare across runs.
TINY_TEST_SIZES: dict[str, object] = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=37,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)

# Variant name -> the fields that shrink its mini config to the tiny sizes, plus what its tests need
# beyond them.
TINY_CONFIGS: dict[str, dict[str, object]] = {
    "albert": {
        **TINY_TEST_SIZES,
        "vocab_size": 99,
        "embedding_size": 16,
        "max_position_embeddings": 64,
        "classifier_dropout": 0.0,
    },
    "bert": {**TINY_TEST_SIZES, "vocab_size": 99, "max_position_embeddings": 64},
    "electra": {**TINY_TEST_SIZES, "vocab_size": 99, "embedding_size": 16, "max_position_embeddings": 64},
    # pad_token_id: batched sequence classification reads the last non-padding token.
    "gpt": {**TINY_TEST_SIZES, "vocab_size": 99, "max_position_embeddings": 64, "pad_token_id": 0},
    "roberta": {**TINY_TEST_SIZES, "vocab_size": 99, "max_position_embeddings": 64},
    "spanbert": {**TINY_TEST_SIZES, "vocab_size": 99, "max_position_embeddings": 64},
    "t5": {**TINY_TEST_SIZES, "decoder_layers": 2, "head_dim": 16, "vocab_size": 99, "ffn_dropout_prob": 0.0},
    "transfo_xl": {**TINY_TEST_SIZES, "head_dim": 16, "vocab_size": 99, "mem_len": 4},
    "transformer": {**TINY_TEST_SIZES, "decoder_layers": 2, "vocab_size": 99, "max_position_embeddings": 64},
    "vit": {
        **TINY_TEST_SIZES,
        "image_size": 8,
        "patch_size": 4,
        "encoder_stride": 4,
        "decoder_hidden_size": 32,
        "decoder_num_hidden_layers": 1,
        "decoder_num_attention_heads": 2,
        "decoder_intermediate_size": 37,
    },
    "xlm": {**TINY_TEST_SIZES, "vocab_size": 99, "max_position_embeddings": 64},
    "xlnet": {**TINY_TEST_SIZES, "vocab_size": 99, "mem_len": 4, "summary_last_dropout": 0.0},
}

CONTIGUOUS_TEXT_ONLY = {"transfo_xl"}  # takes no padding mask (segments of running text)
# Small special-token ids: the real ones of the -mini configs lie beyond vocab 99.
TINY_TOKEN_IDS = dict(pad_token_id=0, eos_token_id=1, bos_token_id=2, decoder_start_token_id=0)


def tiny_config_fields(spec: VariantSpec) -> dict[str, object]:
    """``spec``'s entry of :data:`TINY_CONFIGS`; a ValueError names a variant without one."""
    if spec.name not in TINY_CONFIGS:
        raise ValueError(f"variant {spec.name!r} has no tiny test config: add it to TINY_CONFIGS in {__file__}")
    return TINY_CONFIGS[spec.name]


def tiny_config(spec: VariantSpec, **overrides):
    """``spec``'s mini config at its tiny test sizes (:data:`TINY_CONFIGS`), plus ``overrides``."""
    if spec.mini_config is None:
        raise ValueError(f"variant {spec.name!r}: its SPEC declares no mini_config")
    fields = tiny_config_fields(spec)
    written = json.loads((named_config_path(spec.mini_config) / "config.json").read_text())
    values = {key: value for key, value in written.items() if key != "model_type"}
    values.update(fields)
    # Special tokens the mini config names, moved inside the tiny vocabulary.
    values.update(
        {key: value for key, value in TINY_TOKEN_IDS.items() if values.get(key) is not None and key not in fields}
    )
    values.update(overrides)
    return spec.config_class(**values)


def is_text(spec: VariantSpec) -> bool:
    return all(cls.main_input_name == "input_ids" for cls in spec.classes.values())


def tiny_inputs(spec: VariantSpec, head: str, config, batch: int = 2, length: int = 7, seed: int = 0) -> dict:
    """Inputs for ``spec.classes[head]``: token ids ending in eos (T5's sequence classifier reads
    it) with the second row right-padded, decoder inputs for encoder-decoders, or pixel values."""
    generator = torch.Generator().manual_seed(seed)
    if not is_text(spec):
        size = config.image_size
        return {"pixel_values": torch.randn(batch, config.num_channels, size, size, generator=generator)}
    ids = torch.randint(3, config.vocab_size, (batch, length), generator=generator)
    mask = torch.ones(batch, length, dtype=torch.long)
    if batch > 1 and spec.name not in CONTIGUOUS_TEXT_ONLY:
        mask[1, length - 2 :] = 0
    eos = getattr(config, "eos_token_id", None)
    if eos is not None:
        ids[torch.arange(batch), mask.sum(1) - 1] = eos
    ids = ids.masked_fill(mask == 0, config.pad_token_id if config.pad_token_id is not None else 0)
    inputs = {"input_ids": ids, "attention_mask": mask}
    if head in ("ForMultipleChoice", "DoubleHeadsModel"):  # (B, choices=2, T)
        inputs = {key: torch.stack([value, value.flip(0)], dim=1) for key, value in inputs.items()}
    if is_encoder_decoder(spec, head):
        inputs["decoder_input_ids"] = torch.randint(3, config.vocab_size, (batch, 4), generator=generator)
    return inputs


def is_encoder_decoder(spec: VariantSpec, head: str) -> bool:
    """True when the head's forward takes decoder inputs (T5, the original Transformer)."""
    import inspect

    return "decoder_input_ids" in inspect.signature(spec.classes[head].forward).parameters and head in (
        "Model",
        "ForConditionalGeneration",
    )


def variant_heads(heads: set[str] | None = None) -> list[tuple[VariantSpec, str]]:
    """(spec, head) for every registered spec and head (those in ``heads`` when given)."""
    return [(spec, head) for spec in SPECS.values() for head in spec.classes if heads is None or head in heads]
