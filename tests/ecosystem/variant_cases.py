"""Every registered variant and head as a tiny model with inputs it accepts, for the ecosystem tests.

Read from ``hf_variants.registry.SPECS``: a variant added later is covered with no new code. The
config is the variant's ``<name>-mini`` named config (tests/reliability/fuzz: ``fuzz_variants.base_fields``) shrunk
to the shared tiny sizes; inputs follow the forward's signature (token ids with right padding in
one row, or pixels; decoder inputs for encoder-decoders; choices for multiple choice).
"""

from __future__ import annotations

import dataclasses
import inspect
import os

import pytest
import torch

from hf_variants.registry import SPECS, VariantSpec
from tests.reliability.fuzz import fuzz_variants  # named-config fields, input builder

TINY_SIZES = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                  embedding_size=16, max_position_embeddings=64)  # fmt: skip
BATCH, LENGTH, CHOICES = 2, 8, 2
ENCODER_DECODER_INPUTS = ("decoder_input_ids",)


def all_cases() -> list[tuple[VariantSpec, str]]:
    return [(spec, head) for spec in SPECS.values() for head in spec.classes]


def case_id(spec: VariantSpec, head: str) -> str:
    return f"{spec.name}-{head}"


# CI runs every variant but, per test, one head of each (a different head for each test, so
# together the tests reach every head); HFV_FULL_MATRIX=1 runs every (variant, head) pair in every
# test (`HFV_FULL_MATRIX=1 pytest tests/ecosystem`, about 4x longer).
FULL_MATRIX = os.environ.get("HFV_FULL_MATRIX") == "1"


def params(cases: list[tuple[VariantSpec, str]] | None = None, marks_for=None, rotation: int = 0) -> list:
    """pytest params (spec, head) with readable ids; ``marks_for(spec, head)`` -> marks. Without
    HFV_FULL_MATRIX (and without explicit ``cases``), one head per variant: its
    ``rotation``-th (modulo its head count)."""
    if cases is None:
        cases = all_cases()
        if not FULL_MATRIX:
            cases = [(spec, list(spec.classes)[rotation % len(spec.classes)]) for spec in SPECS.values()]
    return [
        pytest.param(spec, head, id=case_id(spec, head), marks=marks_for(spec, head) if marks_for else ())
        for spec, head in cases
    ]


def tiny_config(spec: VariantSpec, **overrides):
    """The variant's mini config shrunk to TINY_SIZES (fields it has), special token ids kept
    inside the vocabulary, dropout off (outputs compared across runs), then ``overrides``."""
    names = {f.name for f in dataclasses.fields(spec.config_class)}
    base = fuzz_variants.base_fields(spec)
    fields = {k: v for k, v in TINY_SIZES.items() if k in names}
    if base.get("embedding_size") is None:  # only factorized variants (ALBERT, ELECTRA) get a smaller E
        fields.pop("embedding_size", None)
    config = fuzz_variants.make_config(spec, fields)
    for name in names:
        if (
            name.endswith("_token_id")
            and isinstance(getattr(config, name), int)
            and getattr(config, name) >= config.vocab_size
        ):
            setattr(config, name, config.vocab_size - 1)
        if name.endswith(("dropout_prob", "dropout", "dropout_rate")) and isinstance(getattr(config, name), float):
            setattr(config, name, 0.0)
    if "pad_token_id" in names and config.pad_token_id is None:
        config.pad_token_id = 0  # heads that read the last real token need it with batches > 1
    for key, value in overrides.items():
        setattr(config, key, value)
    config.check_architecture()
    return config


def tiny_model(spec: VariantSpec, head: str, seed: int = 0, **overrides) -> torch.nn.Module:
    torch.manual_seed(seed)
    return spec.classes[head](tiny_config(spec, **overrides)).eval()


def is_text(spec: VariantSpec, head: str) -> bool:
    return spec.classes[head].main_input_name == "input_ids"


def model_inputs(spec: VariantSpec, head: str, model: torch.nn.Module, seed: int = 0) -> dict[str, torch.Tensor]:
    """Inputs ``model`` (a ``head`` of ``spec``) accepts: see the module docstring. A model that
    refuses padding (Transformer-XL reads contiguous text) gets unpadded rows."""
    parameters = inspect.signature(model.forward).parameters
    config = model.config
    lengths = [LENGTH, LENGTH - 3] if accepts_padding(spec, head) else [LENGTH, LENGTH]
    shape = {"batch": BATCH, "seed": seed, "length": LENGTH, "lengths": lengths, "left": False, "choices": CHOICES}
    # The choice dimension and mc_token_ids are added below: ask for a plain head's inputs.
    inputs = fuzz_variants.make_inputs(
        spec, head if head not in ("ForMultipleChoice", "DoubleHeadsModel") else "Model", model, shape
    )
    if "input_ids" in inputs:
        eos = getattr(config, "eos_token_id", None)
        if (
            isinstance(eos, int)
            and getattr(config, "is_encoder_decoder", False)
            and head == "ForSequenceClassification"
        ):
            # Encoder-decoder classifiers read the (one) eos token of each row: end every row with it.
            last_real = inputs["attention_mask"].sum(-1, keepdim=True) - 1
            inputs["input_ids"] = inputs["input_ids"].scatter(-1, last_real, eos)
        if head == "ForMultipleChoice" or "mc_token_ids" in parameters:
            inputs = {k: v[:, None].repeat(1, CHOICES, 1) for k, v in inputs.items()}  # (B, C, T)
        if "mc_token_ids" in parameters:
            inputs["mc_token_ids"] = inputs["attention_mask"].sum(-1) - 1  # (B, C): each choice's last real token
        if "decoder_input_ids" in parameters and head != "ForSequenceClassification":
            generator = torch.Generator().manual_seed(seed + 1)
            inputs["decoder_input_ids"] = torch.randint(1, config.vocab_size, (BATCH, 5), generator=generator)
    return inputs


def accepts_padding(spec: VariantSpec, head: str) -> bool:
    """False for a model whose forward refuses a padding mask (a ValueError naming attention_mask)."""
    model = tiny_model(spec, head)
    shape = {"batch": BATCH, "seed": 0, "length": LENGTH, "lengths": [LENGTH, LENGTH - 3], "left": False}
    if not is_text(spec, head) or "attention_mask" not in inspect.signature(model.forward).parameters:
        return True
    inputs = fuzz_variants.make_inputs(spec, "Model", model, shape)
    inputs = {k: inputs[k] for k in ("input_ids", "attention_mask")}
    if "decoder_input_ids" in inspect.signature(model.forward).parameters:
        inputs["decoder_input_ids"] = inputs["input_ids"][:, :3]
    try:
        model(**inputs)
    except ValueError as error:
        return "attention_mask" not in str(error)
    return True


def output_tensors(output) -> dict[str, torch.Tensor]:
    """Every tensor of a model output (nested tuples flattened, keyed by field and index)."""
    items = output.items() if hasattr(output, "items") else enumerate(output)
    found = {}
    for name, value in items:
        if isinstance(value, torch.Tensor):
            found[str(name)] = value
        elif isinstance(value, (tuple, list)):
            for index, part in enumerate(value):
                if isinstance(part, torch.Tensor):
                    found[f"{name}.{index}"] = part
    return found


def assert_outputs_equal(got, expected, atol: float = 1e-5) -> None:
    got, expected = output_tensors(got), output_tensors(expected)
    assert got.keys() == expected.keys(), (sorted(got), sorted(expected))
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, atol=atol, rtol=1e-5, msg=lambda m: f"{name}: {m}")
