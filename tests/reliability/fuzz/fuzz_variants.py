"""Property-based fuzzing of every registered variant and head (hypothesis).

Everything is derived from ``hf_variants.registry.SPECS``: a variant added later is fuzzed with no
new code. Per variant, the base config is its ``<name>-mini`` named config (the class defaults when
it has none); hypothesis then draws the shared architecture fields of
:class:`~hf_variants.modules.configuration.TransformerConfig` (sizes, heads dividing the width,
pre/post-LN, norm type, cross-layer sharing, position type, summary type, padding-free on/off,
eager/SDPA, ...). Which values of each choice field a variant accepts is *probed* through its own
``check_architecture`` (ViT pins pre-LN, learned positions and the first-token summary), so the
draws stay valid without a per-variant table. Inputs follow the model's ``main_input_name``:
token ids with a random padding mask, or pixel values; labels follow the forward's argument names
and the shape of the unlabelled output (see :func:`make_labels`). What is drawn lives in
tests/reliability/fuzz/fuzz_cases.py; this file holds the properties and the drivers.

Properties (each a function of (spec, head, drawn config, drawn inputs)):

- ``valid_run``: every output (and the loss, with labels) is finite.
- ``padding_invariance``: extra right padding changes nothing at real tokens (token inputs only).
- ``batch_invariance``: each example alone equals its row of the batch (<= 1e-5).
- ``determinism``: the same seed builds the same model and gives the same training-mode outputs.
- ``invalid_config``: one field made invalid -> ``ValueError`` naming the field, at model build.
- ``invalid_input``: one input made invalid -> ``ValueError`` naming the input.

Run the nightly size (>= 1,000 cases per variant) with::

    python -m tests.reliability.fuzz.fuzz_variants --cases-per-variant 1000 --max-minutes 60

The CI sample is tests/reliability/test_fuzz_variants.py (a few cases per variant, head and property).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import inspect
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from hf_variants.registry import SPECS, VariantSpec
from tests.reliability.fuzz.fuzz_cases import (  # noqa: F401
    POSITION_LABELS,
    SHARED_FIELDS,
    SOURCE_TOKEN_INPUTS,
    accepted_choices,
    accepts_padding,
    accepts_padding_model,
    base_fields,
    build,
    constructor_kwargs,
    input_shapes,
    is_text,
    longest_input,
    make_config,
    make_inputs,
    make_labels,
    valid_fields,
)

NEGATIVE_MEANS_OFF = ("clamp_len",)
# What a property must know of a variant that follows its transformers counterpart (parity), by model_type.
# Summary types that read padding positions too: "last" is position T-1 everywhere but XLNet, whose
# "last" reads each row's last real token (its <cls>, wherever the batch pads); XLNet's "mean", as
# transformers', averages all T positions, padding included.
SUMMARY_READS_PADDING: dict[str, tuple[str, ...]] = {"hfv_xlnet": ("mean",)}
# token_type_ids that only say whether two tokens share a segment (XLNet's relative segment
# encoding, no table): any integers are valid, so "out of range" is no invalid input.
RELATIVE_SEGMENTS = frozenset({"hfv_xlnet"})
PROPERTIES = ("valid_run", "padding_invariance", "batch_invariance", "determinism", "invalid_config", "invalid_input")
TOLERANCE = 1e-5


# ----------------------------------------------------------------------------- comparisons
def output_tensors(output) -> dict[str, torch.Tensor]:
    """The tensor fields of a model output that hold predictions (no loss, hidden states, attentions)."""
    return {name: value for name, value in output.items() if isinstance(value, torch.Tensor) and name != "loss"}


def assert_finite(output) -> None:
    for name, value in output.items():
        values = value if isinstance(value, tuple) else (value,)
        for tensor in values:
            if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                assert bool(torch.isfinite(tensor).all()), f"{name} holds non-finite values"


def assert_rows_equal(name: str, got: torch.Tensor, expected: torch.Tensor, real: torch.Tensor | None) -> None:
    """Compare outputs; ``real`` (the leading dims of a per-token output) selects the real tokens."""
    if real is not None:
        got, expected = got[real.bool()], expected[real.bool()]
    if not got.numel():
        return
    diff = (got - expected).abs().max().item()
    # 1e-5 absolute for outputs of magnitude <= 1, relative above (initializer_range 1.0 gives
    # logits in the hundreds, where fp32 rounding alone exceeds 1e-5).
    bound = TOLERANCE * max(1.0, expected.abs().max().item())
    assert diff <= bound, f"{name}: max abs diff {diff:.3g} > {bound:.3g}"


@dataclasses.dataclass
class Comparison:
    """One output field of two calls that must agree: ``got_call`` and ``expected_call`` are the
    inputs of the two forwards, ``got_part`` / ``expected_part`` cut the compared rows or positions
    out of their outputs, ``real`` (or None) selects the real tokens of a per-token field."""

    name: str
    got_call: dict
    expected_call: dict
    got_part: object
    expected_part: object
    real: torch.Tensor | None


def assert_agree_up_to_rounding(model, comparison: Comparison, outputs32: tuple[dict, dict]) -> None:
    """The two float32 outputs agree to 1e-5 (relative above magnitude 1); where they do not, the
    difference must be fp32 rounding between two evaluation orders (batch shapes pick different
    matmul blockings, packed lengths different kernels), checked from the computation itself:

    - in float64 (the same weights and inputs), the two calls agree to 1e-5 as well (any real
      invariance bug -- a padding leak, a wrong position -- survives float64 unchanged);
    - the float32 difference is at most the sum of the two float32 evaluations' own errors against
      float64: |a32 - b32| <= |a32 - a64| + |a64 - b64| + |b64 - b32| (the triangle inequality).
    """
    got32 = comparison.got_part(outputs32[0][comparison.name])
    expected32 = comparison.expected_part(outputs32[1][comparison.name])
    try:
        assert_rows_equal(comparison.name, got32, expected32, comparison.real)
        return
    except AssertionError as fp32_failure:
        exact = float64_copy(model)
        with torch.no_grad():
            got64 = comparison.got_part(output_tensors(exact(**as_float64(comparison.got_call)))[comparison.name])
            expected64 = comparison.expected_part(
                output_tensors(exact(**as_float64(comparison.expected_call)))[comparison.name]
            )
        assert_rows_equal(f"{comparison.name} (float64)", got64, expected64, comparison.real)
        diff, rounding = float32_gap_and_rounding(got32, expected32, got64, expected64, comparison.real)
        assert diff <= rounding, (
            f"{fp32_failure} and exceeds the two evaluations' own float32 rounding ({rounding:.3g})"
        )


def float32_gap_and_rounding(
    got32: torch.Tensor, expected32: torch.Tensor, got64: torch.Tensor, expected64: torch.Tensor, real
) -> tuple[float, float]:
    """The largest float32 difference |a32 - b32| over the real tokens (``real``: a mask, or None
    for all), and its bound from the two evaluations' own errors against float64:
    |a32 - a64| + |a64 - b64| + |b64 - b32| (the triangle inequality)."""
    select = real.bool() if real is not None else slice(None)

    def largest(tensor):
        return tensor[select].abs().max().item()

    gap = largest(got32.double() - expected32.double())
    rounding = largest(got32.double() - got64) + largest(got64 - expected64) + largest(expected32.double() - expected64)
    return gap, rounding


def float64_copy(model):
    """The model with every parameter and buffer in float64 (a reference ~1e9 times finer than fp32)."""
    return copy.deepcopy(model).double()


def as_float64(inputs: dict) -> dict:
    return {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in inputs.items()}


def token_level_fields(model, inputs: dict[str, torch.Tensor]) -> set[str]:
    """Names of the output fields with one entry per token: those whose size along the token
    dimension follows the input length (found by one call with a column of padding more)."""
    if "attention_mask" not in inputs:
        return set()
    mask = inputs["attention_mask"]
    token_dim, length = mask.dim() - 1, mask.shape[-1]
    with torch.no_grad():
        base = output_tensors(model(**inputs))
    candidates = {
        name
        for name, value in base.items()
        if value.dim() > token_dim and tuple(value.shape[: mask.dim()]) == tuple(mask.shape)
    }
    if length < longest_input(model):
        change = 1
    elif length > 1:
        change = -1
    else:  # a one-token model: selecting the (one, real) token changes nothing anyway
        return candidates
    real_extra = int(not accepts_padding_model(model))  # a head refusing padding gets one more real token
    other = (
        with_source_padding(inputs, 1, 0, mask_value=real_extra)
        if change == 1
        else {k: v[..., :-1] if k in SOURCE_TOKEN_INPUTS else v for k, v in inputs.items()}
    )
    with torch.no_grad():
        changed = output_tensors(model(**other))
    return {name for name in candidates if changed[name].shape[token_dim] == length + change}


def with_source_padding(
    inputs: dict[str, torch.Tensor], extra: int, pad_id: int, mask_value: int = 0
) -> dict[str, torch.Tensor]:
    """``inputs`` with ``extra`` padding positions more on the right of the source (input_ids
    get ``pad_id``, the mask ``mask_value``, segment ids 0); a decoder's inputs and positions
    (mc_token_ids) stay as they are."""
    fill = {"input_ids": pad_id, "attention_mask": mask_value}
    return {
        k: torch.nn.functional.pad(v, (0, extra), value=fill.get(k, 0)) if k in SOURCE_TOKEN_INPUTS else v
        for k, v in inputs.items()
    }


def is_stochastic(model, inputs: dict[str, torch.Tensor]) -> bool:
    """True when two eval-mode calls on the same inputs differ (a head that draws, e.g. MAE's masking)."""
    with torch.no_grad():
        first, second = output_tensors(model(**inputs)), output_tensors(model(**inputs))
    return any(first[k].shape != second[k].shape or not torch.equal(first[k], second[k]) for k in first)


# ----------------------------------------------------------------------------- properties
def prop_valid_run(spec, head, fields, shape) -> str | None:
    model, config = build(spec, head, fields)
    inputs = make_inputs(spec, head, model, shape)
    labels = make_labels(model, inputs, torch.Generator().manual_seed(shape["seed"] + 1))
    model.train()
    output = model(**inputs, **labels)
    assert_finite(output)
    if labels or output.get("loss") is not None:
        loss = output.get("loss")
        if loss is not None:
            loss.backward()  # gradients finite too
            for name, parameter in model.named_parameters():
                assert parameter.grad is None or bool(torch.isfinite(parameter.grad).all()), (
                    f"grad of {name} not finite"
                )
    return None


def prop_padding_invariance(spec, head, fields, shape) -> str | None:
    if not is_text(spec):
        return f"{spec.name}: not applicable, its main input is {spec.classes[head].main_input_name} (fixed token count, no padding)"
    if not accepts_padding(spec, head):
        return f"{spec.name} {head}: not applicable, refuses padding (contiguous text only)"
    model, config = build(spec, head, fields)
    inputs = make_inputs(spec, head, model, shape)
    if is_stochastic(model, inputs):
        return f"{head}: stochastic outputs"
    extra = 3
    assume(shape["length"] + extra <= longest_input(model))
    padded = with_source_padding(inputs, extra, config.pad_token_id if config.pad_token_id is not None else 0)
    per_token = token_level_fields(model, inputs)
    with torch.no_grad():
        base, more = output_tensors(model(**inputs)), output_tensors(model(**padded))
    mask = inputs["attention_mask"]
    first_positions = (slice(None),) * (mask.dim() - 1) + (slice(0, mask.shape[-1]),)
    for name in base:
        if name in per_token:  # real positions only
            comparison = Comparison(name, padded, inputs, lambda out: out[first_positions], lambda out: out, mask)
        elif config.summary_type in SUMMARY_READS_PADDING.get(spec.model_type, ("last",)) or (
            config.summary_type == "first" and not bool(mask[..., 0].all())
        ):
            # "last" reads position T-1, which extra padding moves by definition (XLNet's "mean",
            # as transformers', averages the padding too); "first" on a
            # left-padded row reads a padding token, whose state no real token defines (causal
            # attention leaves it no visible key at all).
            continue
        else:
            comparison = Comparison(name, padded, inputs, lambda out: out, lambda out: out, None)
        assert_agree_up_to_rounding(model, comparison, (more, base))
    return None


def prop_batch_invariance(spec, head, fields, shape) -> str | None:
    model, config = build(spec, head, fields)
    inputs = make_inputs(spec, head, model, shape)
    if is_stochastic(model, inputs):
        return f"{head}: stochastic outputs (checked by determinism instead)"
    per_token = token_level_fields(model, inputs)
    with torch.no_grad():
        batch_out = output_tensors(model(**inputs))
        for row in range(shape["batch"]):
            row_inputs = {k: v[row : row + 1] for k, v in inputs.items()}
            alone = output_tensors(model(**row_inputs))
            for name in alone:
                real = inputs["attention_mask"][row : row + 1] if name in per_token else None
                comparison = Comparison(
                    name, row_inputs, inputs, lambda out: out, lambda out, row=row: out[row : row + 1], real
                )
                try:
                    assert_agree_up_to_rounding(model, comparison, (alone, batch_out))
                except AssertionError as error:
                    raise AssertionError(f"row {row}: {error}") from None
    return None


def prop_determinism(spec, head, fields, shape) -> str | None:
    """Same seed -> same weights and the same training-mode (dropout, random masking) outputs."""
    results = []
    for _ in range(2):
        model, config = build(spec, head, fields)
        inputs = make_inputs(spec, head, model, shape)
        model.train()
        torch.manual_seed(fields["_seed"] + 1)
        results.append(output_tensors(model(**inputs)))
    for name, value in results[0].items():
        assert torch.equal(value, results[1][name]), f"{name} differs between two runs under one seed"
    return None


_PADDING_ROWS: dict[str, bool] = {}


def has_padding_row(spec: VariantSpec) -> bool:
    """Whether the variant's word table keeps a padding row (its pad id is looked up at build)."""
    if spec.name not in _PADDING_ROWS:
        with torch.device("meta"):
            model = next(iter(spec.classes.values()))(make_config(spec, {"pad_token_id": 0}))
        _PADDING_ROWS[spec.name] = getattr(model.get_input_embeddings(), "padding_idx", None) is not None
    return _PADDING_ROWS[spec.name]


def invalid_config_mutations(spec: VariantSpec, fields: dict) -> list[tuple[dict, str]]:
    """(field changes, the name the ValueError must contain) making a valid config invalid."""
    hidden, heads = fields["hidden_size"], fields["num_attention_heads"]
    mutations = [
        ({"num_attention_heads": hidden + 1, "head_dim": None}, "num_attention_heads"),
        ({"layer_sharing": "some"}, "layer_sharing"),
        ({"norm_type": "batch_norm"}, "norm_type"),
        ({"position_embedding_type": "rotary"}, "position_embedding_type"),
        ({"summary_type": "max"}, "summary_type"),
        ({"hidden_act": "no_such_activation"}, "hidden_act"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
        ({"attention_probs_dropout_prob": -0.1}, "attention_probs_dropout_prob"),
        ({"layer_norm_eps": -1e-5}, "layer_norm_eps"),
        ({"layer_norm_eps": 0.0}, "layer_norm_eps"),
        ({"head_dim": -heads}, "head_dim"),
    ]
    for name in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"):
        mutations.append(({name: 0}, name))
        mutations.append(({name: -1}, name))
    if is_text(spec):
        mutations += [
            ({"vocab_size": 0}, "vocab_size"),
            ({"max_position_embeddings": 0}, "max_position_embeddings"),
            ({"type_vocab_size": -1}, "type_vocab_size"),
            ({"embedding_size": 0}, "embedding_size"),
        ]
    if is_text(spec) and has_padding_row(spec):
        # Special ids are refused where they are looked up (hf_variants/modules/token_ids.py): the
        # padding row of the word table is, at build; a variant without one builds with any pad id.
        mutations.append(({"pad_token_id": fields["vocab_size"]}, "pad_token_id"))
    # The variant's own integer fields (sizes, counts): negative is never meaningful, except where
    # transformers gives -1 a meaning (clamp_len -1: no clamping, Transformer-XL and XLNet).
    base = make_config(spec, {})
    for field in dataclasses.fields(spec.config_class):
        value = getattr(base, field.name, None)
        is_size = (
            isinstance(value, int) and not isinstance(value, bool) and value > 0 and not field.name.endswith("_id")
        )
        if field.name not in SHARED_FIELDS and field.name not in NEGATIVE_MEANS_OFF and is_size:
            mutations.append(({field.name: -1}, field.name))
    return mutations


@st.composite
def invalid_config_cases(draw, spec: VariantSpec):
    fields = draw(valid_fields(spec))
    try:  # mutate valid configs only, so the error can only be about the mutated field
        make_config(spec, {k: v for k, v in fields.items() if not k.startswith("_")}).check_architecture()
    except ValueError:
        assume(False)
    mutations = invalid_config_mutations(spec, fields)
    return fields, draw(st.sampled_from(mutations))


def prop_invalid_config(spec, head, fields, mutation) -> str | None:
    changes, expected_name = mutation
    kwargs = {**constructor_kwargs(head, fields), **changes}
    try:
        config = make_config(spec, kwargs)
    except ValueError as error:  # refused at construction: fine too, as long as it names the field
        assert expected_name in str(error), f"{changes}: ValueError does not name {expected_name!r}: {error}"
        return None
    try:
        model = spec.classes[head](config)
    except ValueError as error:
        assert expected_name in str(error), f"{changes}: ValueError does not name {expected_name!r}: {error}"
        return None
    except Exception as error:  # noqa: BLE001 (the point: anything but a ValueError is a failure)
        raise AssertionError(f"{changes}: {type(error).__name__} instead of a ValueError: {error}") from error
    raise AssertionError(
        f"{changes}: the model was built ({type(model).__name__}); expected a ValueError naming {expected_name!r}"
    )


def invalid_input_mutations(
    spec: VariantSpec, head: str, model, inputs: dict, labels: dict
) -> list[tuple[str, dict, str]]:
    """(description, replacement inputs, a word the ValueError must contain)."""
    config = model.config
    cases = []
    main = spec.classes[head].main_input_name
    cases.append(("empty batch", {k: v[:0] for k, v in {**inputs, **labels}.items()}, main))
    if main == "input_ids":
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        cases += [
            ("float ids", {"input_ids": ids.float()}, "input_ids"),
            ("id == vocab_size", {"input_ids": ids.clone().fill_(config.vocab_size)}, "input_ids"),
            ("negative id", {"input_ids": ids.clone().fill_(-1)}, "input_ids"),
            ("empty sequences", {k: v[..., :0] for k, v in inputs.items()}, "input_ids"),
            ("mask one longer", {"attention_mask": torch.nn.functional.pad(mask, (0, 1), value=1)}, "attention_mask"),
            ("mask without its batch dim", {"attention_mask": mask[0]}, "attention_mask"),
            # One example without its batch dim (the usual mistake); labels dropped so that the
            # error can only be about the ids' shape (multiple choice: "inputs must have shape ...").
            ("ids without their batch dim", {"input_ids": ids[0], **dict.fromkeys(labels)}, "shape"),
            ("mask of halves", {"attention_mask": mask.float() * 0.5}, "attention_mask"),
            ("mask of twos", {"attention_mask": mask * 2}, "attention_mask"),
            (
                "token_type_ids out of range",
                {
                    "token_type_ids": torch.full_like(ids, 10**6)
                },  # past any table (XLM embeds segments in the word table)
                "token_type_ids",
            ),
        ]
        if config.position_embedding_type != "none":  # "none": position_ids are not read
            cases.append(
                (
                    "position_ids out of range",
                    {"position_ids": torch.full_like(ids, config.max_position_embeddings)},
                    "position_ids",
                )
            )
            longer = longest_input(model) + 1
            cases.append(
                (
                    "over-long sequence",
                    {
                        "input_ids": torch.ones(*ids.shape[:-1], longer, dtype=torch.long),
                        "attention_mask": torch.ones(*ids.shape[:-1], longer, dtype=torch.long),
                        **({"token_type_ids": None} if "token_type_ids" in inputs else {}),
                        **dict.fromkeys(
                            labels
                        ),  # labels of the old length would be a second fault (ELECTRA checks them first)
                    },
                    "sequence length",
                )
            )
    if main == "pixel_values":
        pixels = inputs["pixel_values"]
        cases += [
            ("pixels without a batch dim", {"pixel_values": pixels[0]}, "pixel_values"),
            ("wrong channel count", {"pixel_values": pixels.repeat(1, 2, 1, 1)}, "channels"),
            ("wrong image size", {"pixel_values": pixels[..., :-1, :-1]}, "size"),
        ]
    for name, label in labels.items():
        cases.append((f"{name} one row longer", {name: torch.cat([label, label[:1]])}, name))
        if (
            not label.is_floating_point() and name not in POSITION_LABELS
        ):  # answers past the end are ignored, as in transformers
            top = int(label.max()) if label.numel() else 0
            cases.append((f"{name} far out of range", {name: label.clone().fill_(top + 10**6)}, name))
    if "token_type_ids" not in inputs:
        # Without a segment table, token_type_ids must be refused by name where the forward would
        # take them (a named argument or **kwargs); a forward without either already refuses them
        # (Python's TypeError names the argument, as transformers' T5 classifier does). XLNet's
        # relative segments take any integers (RELATIVE_SEGMENTS).
        takes = "token_type_ids" in inspect.signature(model.forward).parameters or any(
            p.kind is p.VAR_KEYWORD for p in inspect.signature(model.forward).parameters.values()
        )
        cases = [
            case
            for case in cases
            if case[0] != "token_type_ids out of range" or (config.type_vocab_size == 0 and takes)
        ]
    if spec.model_type in RELATIVE_SEGMENTS:
        cases = [case for case in cases if case[0] != "token_type_ids out of range"]
    return cases


def prop_invalid_input(spec, head, fields, shape, pick) -> str | None:
    model, config = build(spec, head, fields)
    inputs = make_inputs(spec, head, model, shape)
    labels = make_labels(model, inputs, torch.Generator().manual_seed(shape["seed"] + 1))
    cases = invalid_input_mutations(spec, head, model, inputs, labels)
    description, changes, expected = cases[pick % len(cases)]
    call = {k: v for k, v in {**inputs, **labels, **changes}.items() if v is not None}
    try:
        with torch.no_grad():
            output = model(**call)
    except ValueError as error:
        assert expected in str(error), f"{description}: ValueError does not name {expected!r}: {error}"
        return None
    except Exception as error:  # noqa: BLE001
        raise AssertionError(f"{description}: {type(error).__name__} instead of a ValueError: {error}") from error
    raise AssertionError(
        f"{description}: ran without error (outputs finite: "
        f"{all(torch.isfinite(t).all() for t in output_tensors(output).values() if t.is_floating_point())})"
    )


# ----------------------------------------------------------------------------- hypothesis drivers
def run_property(
    prop: str,
    spec: VariantSpec,
    head: str,
    max_examples: int,
    derandomize: bool,
    counter: Counter | None = None,
    skipped: set | None = None,
    shrink: bool = True,
) -> None:
    """Run one property for one (variant, head) with hypothesis; raises on the first failure (shrunk)."""
    counter = counter if counter is not None else Counter()
    skipped = skipped if skipped is not None else set()
    options = settings(
        max_examples=max_examples,
        derandomize=derandomize,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
        report_multiple_bugs=False,
        phases=[Phase.explicit, Phase.generate, *([Phase.shrink] if shrink else [])],
    )
    key = (spec.name, head, prop)

    def record(reason):
        counter[key] += 1
        if reason:
            skipped.add((spec.name, head, prop, reason))

    if prop == "invalid_config":

        @options
        @given(case=invalid_config_cases(spec))
        def check(case):
            record(prop_invalid_config(spec, head, *case))
    elif prop == "invalid_input":

        @options
        @given(data=st.data())
        def check(data):
            fields = data.draw(valid_fields(spec))
            shape = data.draw(input_shapes(spec, fields))
            record(prop_invalid_input(spec, head, fields, shape, data.draw(st.integers(0, 1000))))
    else:
        function = globals()[f"prop_{prop}"]

        @options
        @given(data=st.data())
        def check(data):
            fields = data.draw(valid_fields(spec))
            record(function(spec, head, fields, data.draw(input_shapes(spec, fields))))

    check()


def variant_heads() -> list[tuple[VariantSpec, str]]:
    return [(spec, head) for spec in SPECS.values() for head in spec.classes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases-per-variant", type=int, default=1000, help="spread over its heads and properties")
    parser.add_argument(
        "--max-minutes", type=float, default=60.0, help="stop starting new (head, property) runs after this"
    )
    parser.add_argument("--variants", nargs="*", help="variant names (default: every registered one)")
    parser.add_argument("--json", type=Path, help="write the counts and failures here")
    parser.add_argument("--no-shrink", action="store_true", help="report failures unshrunk (bounded time)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.monotonic()
    counter, skipped, failures = Counter(), set(), []
    specs = [s for s in SPECS.values() if not args.variants or s.name in args.variants]
    for spec in specs:
        runs = [(head, prop) for head in spec.classes for prop in PROPERTIES]
        per_run = math.ceil(args.cases_per_variant / len(runs))
        for head, prop in runs:
            if time.monotonic() - start > args.max_minutes * 60:
                break
            try:
                run_property(
                    prop,
                    spec,
                    head,
                    per_run,
                    derandomize=False,
                    counter=counter,
                    skipped=skipped,
                    shrink=not args.no_shrink,
                )
            except Exception as error:  # noqa: BLE001  (report every failing run, keep going)
                notes = " | ".join(getattr(error, "__notes__", []))[:2000]
                failures.append(
                    {"variant": spec.name, "head": head, "property": prop, "error": str(error)[:2000], "example": notes}
                )
                print(f"FAIL {spec.name} {head} {prop}: {str(error)[:500]}", flush=True)
            print(f"{spec.name:10s} {head:28s} {prop:20s} cases={counter[(spec.name, head, prop)]}", flush=True)
    per_variant = Counter()
    for (variant, _, _), count in counter.items():
        per_variant[variant] += count
    summary = {
        "cases_per_variant": dict(per_variant),
        "failures": failures,
        "minutes": (time.monotonic() - start) / 60,
        "not_applicable": sorted({f"{v} {h} {p}: {r}" for v, h, p, r in skipped}),
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
