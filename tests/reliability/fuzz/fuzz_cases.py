"""What the property fuzzer (tests/reliability/fuzz/fuzz_variants.py) draws, for any registered variant and head:
random valid tiny configs (the variant's ``*-mini`` config with the shared architecture fields
drawn, keeping the values its ``check_architecture`` accepts), inputs that follow the model's
``main_input_name`` (token ids with random padding, decoder inputs for encoder-decoders, choice
dimensions, pixel values) and labels shaped by the unlabelled output.

Variant facts are probed, not tabulated: which choice values a config accepts
(:func:`accepted_choices`), which heads refuse padding (:func:`accepts_padding`), which take decoder
inputs (:func:`needs_decoder_inputs`) or ``mc_token_ids``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json

import torch
from hypothesis import assume
from hypothesis import strategies as st

import hf_variants  # noqa: F401  (registers every variant)
from hf_variants.models.named_configs import named_config, named_config_path
from hf_variants.modules.configuration import TransformerConfig
from hf_variants.registry import SPECS, VariantSpec

IGNORE_INDEX = -100

# Choice fields of TransformerConfig and the values drawn for them (a variant keeps those its
# check_architecture accepts one at a time; see accepted_choices).
CHOICE_FIELDS: dict[str, tuple] = {
    "pre_layer_norm": (False, True),
    "norm_type": ("layer_norm", "rms_norm"),
    "layer_sharing": ("none", "all", "attention", "ffn"),
    "position_embedding_type": ("learned", "sinusoidal", "none"),
    "summary_type": ("first", "last", "last_real", "mean"),
    "is_decoder": (False, True),
    "gated_ffn": (False, True),
    "use_bias": (True, False),
    "hidden_act": ("gelu", "relu", "gelu_new", "silu"),
    "padding_free": (True, False),
    "sparse_prediction": (False, True),
    "attention_scale": (None, 1.0),
    "layer_norm_eps": (1e-12, 1e-6, 1e-5),
}
# Size fields drawn for every variant (widths are drawn as heads x per-head width).
TEXT_ONLY_FIELDS = ("vocab_size", "max_position_embeddings", "type_vocab_size", "embedding_size", "pad_token_id")
SHARED_FIELDS = {f.name for f in dataclasses.fields(TransformerConfig)}


# ----------------------------------------------------------------------------- configs
def mini_config_name(spec: VariantSpec) -> str | None:
    """The variant's small named config, as its spec names it (gpt -> gpt2-mini); None when it has none."""
    return spec.mini_config


def base_fields(spec: VariantSpec) -> dict:
    """The variant's ``*-mini`` named config as constructor kwargs (its class defaults if none)."""
    name = mini_config_name(spec)
    if name is None:
        return {}
    written = json.loads((named_config_path(name) / "config.json").read_text())
    config = named_config(name)
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(spec.config_class) if f.name in written}


def is_text(spec: VariantSpec) -> bool:
    """True when the variant's main input is token ids (every head agrees on the main input)."""
    return all(cls.main_input_name == "input_ids" for cls in spec.classes.values())


def make_config(spec: VariantSpec, fields: dict):
    return spec.config_class(**{**base_fields(spec), **fields})


def special_token_fields(spec: VariantSpec) -> list[str]:
    """The config's special token ids other than padding (bos, eos, decoder_start, ...) that the
    base config sets: drawn inside the drawn vocabulary, or they would point past it."""
    base = make_config(spec, {})
    return sorted(
        name
        for name in vars(base)
        if name.endswith("_token_id") and name != "pad_token_id" and isinstance(getattr(base, name), int)
    )


_ACCEPTED: dict[str, dict[str, tuple]] = {}


def accepted_choices(spec: VariantSpec) -> dict[str, tuple]:
    """Per choice field, the values the variant's check_architecture accepts (probed one field at a
    time on the base config); fields with a single accepted value are pinned to it."""
    if spec.name not in _ACCEPTED:
        accepted = {}
        for name, values in CHOICE_FIELDS.items():
            keep = []
            for value in values:
                try:
                    make_config(spec, {name: value}).check_architecture()
                    keep.append(value)
                except ValueError:
                    pass
            accepted[name] = tuple(keep)
        _ACCEPTED[spec.name] = accepted
    return _ACCEPTED[spec.name]


@st.composite
def valid_fields(draw, spec: VariantSpec) -> dict:
    """Constructor kwargs of a random valid tiny config of ``spec`` (plus "_attn" and "_seed")."""
    heads = draw(st.integers(1, 4))
    fields = {
        "num_attention_heads": heads,
        "hidden_size": heads * draw(st.sampled_from((2, 4, 8))),
        "num_hidden_layers": draw(st.integers(1, 3)),
        "intermediate_size": draw(st.integers(1, 48)),
        "hidden_dropout_prob": draw(st.sampled_from((0.0, 0.1, 0.5))),
        "attention_probs_dropout_prob": draw(st.sampled_from((0.0, 0.1))),
        "num_labels": draw(st.integers(1, 5)),
        "initializer_range": draw(st.sampled_from((0.02, 0.2, 1.0))),
    }
    if draw(st.booleans()):
        fields["head_dim"] = draw(st.sampled_from((2, 4, 8)))
    for name, values in accepted_choices(spec).items():
        if values:
            fields[name] = draw(st.sampled_from(values))
    if is_text(spec):
        special = special_token_fields(spec)
        fields["vocab_size"] = draw(st.integers(len(special) + 2, 99))
        fields["max_position_embeddings"] = draw(st.integers(8, 40))
        fields["type_vocab_size"] = draw(st.integers(0, 3))
        # Real special ids are small and distinct (eos must not be padding: T5's classifier counts eos).
        small = list(range(min(fields["vocab_size"], len(special) + 5)))
        ids = draw(st.permutations(small))
        fields["pad_token_id"] = ids[0]
        fields.update(zip(special, ids[1:]))
        if draw(st.booleans()):
            fields["embedding_size"] = draw(st.integers(2, 24))
    fields["_attn"] = draw(st.sampled_from(("eager", "sdpa")))
    fields["_seed"] = draw(st.integers(0, 2**16))
    return fields


def build(spec: VariantSpec, head: str, fields: dict):
    """(model, config) for drawn ``fields``, or a hypothesis rejection when the drawn combination
    is one the variant refuses (a ValueError from check_architecture)."""
    config = make_config(spec, constructor_kwargs(head, fields))
    try:
        config.check_architecture()
    except ValueError:
        assume(False)
    torch.manual_seed(fields["_seed"])
    model = spec.classes[head](config)
    model.config._attn_implementation = fields["_attn"]
    return model.eval(), config


def constructor_kwargs(head: str, fields: dict) -> dict:
    """The drawn fields a config is built from: without the "_" draws, and with the two labels a
    question answering head predicts (start and end: T5's head requires num_labels == 2)."""
    kwargs = {k: v for k, v in fields.items() if not k.startswith("_")}
    return {**kwargs, "num_labels": 2} if head.endswith("ForQuestionAnswering") else kwargs


# ----------------------------------------------------------------------------- inputs
@st.composite
def input_shapes(draw, spec: VariantSpec, fields: dict) -> dict:
    """Batch size, length, per-row real lengths and padding side, and a tensor seed."""
    batch = draw(st.integers(1, 4))
    shape = {"batch": batch, "seed": draw(st.integers(0, 2**16))}
    if is_text(spec):
        longest = fields["max_position_embeddings"] if fields.get("position_embedding_type") != "none" else 40
        length = draw(st.integers(1, min(longest, 16)))
        shape.update(
            length=length,
            lengths=draw(st.lists(st.integers(1, length), min_size=batch, max_size=batch)),
            left=draw(st.booleans()),
            choices=draw(st.integers(1, 3)),
            decoder_length=draw(st.integers(1, min(longest, 8))),
        )
    return shape


_ACCEPTS_PADDING: dict[tuple[str, str], bool] = {}


def accepts_padding(spec: VariantSpec, head: str) -> bool:
    """False for a head that refuses any padding (Transformer-XL reads contiguous text: a mask with
    a 0 is a ValueError naming attention_mask); probed once on the base config."""
    key = (spec.name, head)
    if key not in _ACCEPTS_PADDING:
        model = spec.classes[head](make_config(spec, constructor_kwargs(head, {}))).eval()
        ids = torch.tensor([[3, 4, 3, 4]]) % model.config.vocab_size
        call = {"input_ids": ids, "attention_mask": torch.tensor([[1, 1, 1, 0]])}
        if needs_decoder_inputs(spec, head):
            call["decoder_input_ids"] = ids
        try:
            with torch.no_grad():
                model(**call)
            _ACCEPTS_PADDING[key] = True
        except ValueError as error:
            _ACCEPTS_PADDING[key] = "attention_mask" not in str(error)
    return _ACCEPTS_PADDING[key]


def accepts_padding_model(model) -> bool:
    """:func:`accepts_padding` for a built model (its spec and head found from its class)."""
    spec = next(s for s in SPECS.values() if type(model) in s.classes.values())
    head = next(h for h, cls in spec.classes.items() if cls is type(model))
    return accepts_padding(spec, head)


_NEEDS_DECODER_INPUTS: dict[tuple[str, str], bool] = {}


def needs_decoder_inputs(spec: VariantSpec, head: str) -> bool:
    """An encoder-decoder head that cannot run without decoder_input_ids (the base model, the LM
    head without labels); T5's classification and QA heads derive theirs from input_ids, and
    its encoder-only heads take none. Probed once on the base config."""
    key = (spec.name, head)
    if key not in _NEEDS_DECODER_INPUTS:
        model = spec.classes[head](make_config(spec, constructor_kwargs(head, {}))).eval()
        needs = False
        if model.config.is_encoder_decoder and "decoder_input_ids" in inspect.signature(model.forward).parameters:
            ids = torch.tensor([[3, 4, 3, 4]]) % model.config.vocab_size
            eos = getattr(model.config, "eos_token_id", None)
            if isinstance(eos, int):
                ids[:, -1] = eos
            try:
                with torch.no_grad():
                    model(input_ids=ids)
            except ValueError as error:
                needs = "decoder_input_ids" in str(error)
        _NEEDS_DECODER_INPUTS[key] = needs
    return _NEEDS_DECODER_INPUTS[key]


def longest_input(model) -> int:
    """The longest token sequence the model embeds: its embeddings' ``max_sequence_length`` where
    they define one (RoBERTa's positions start after the padding index), else max_position_embeddings
    (unbounded without position embeddings)."""
    config = model.config
    if config.position_embedding_type == "none":
        return 10**6
    embeddings = getattr(model.base_model, "embeddings", None)
    return getattr(embeddings, "max_sequence_length", config.max_position_embeddings)


def make_inputs(spec: VariantSpec, head: str, model, shape: dict) -> dict[str, torch.Tensor]:
    """The model's main input (``main_input_name``) and, for token ids, mask and segments.
    Multiple choice inputs get a choice dimension: (B, C, T). Draws longer than the model takes are
    rejected (hypothesis draws again)."""
    config = model.config
    if "length" in shape:
        assume(shape["length"] <= longest_input(model))
    generator = torch.Generator().manual_seed(shape["seed"])
    main_input = spec.classes[head].main_input_name
    if main_input == "pixel_values":
        size = config.image_size
        return {"pixel_values": torch.randn(shape["batch"], config.num_channels, size, size, generator=generator)}
    if main_input != "input_ids":
        raise NotImplementedError(
            f"no input generator for main input {main_input!r}; add one to tests/reliability/fuzz/fuzz_variants.py"
        )
    batch, length = shape["batch"], shape["length"]
    position = torch.arange(length)[None, :]
    real_lengths = torch.tensor(shape["lengths"] if accepts_padding(spec, head) else [length] * batch)[:, None]
    mask = (position >= length - real_lengths) if shape["left"] else (position < real_lengths)
    mask = mask.long()
    ids = torch.randint(0, config.vocab_size, (batch, length), generator=generator)
    decoder = needs_decoder_inputs(spec, head)
    eos = getattr(config, "eos_token_id", None)
    if config.is_encoder_decoder and isinstance(
        eos, int
    ):  # sources end in EOS, as a tokenizer writes them (T5's classifier reads it)
        ids = ids.masked_fill(ids == eos, (eos + 1) % config.vocab_size)
        last_real = torch.full((batch,), length - 1) if shape["left"] else real_lengths[:, 0] - 1
        ids[torch.arange(batch), last_real] = eos
    if config.pad_token_id is not None:
        ids = torch.where(mask.bool(), ids, config.pad_token_id)
    inputs = {"input_ids": ids, "attention_mask": mask}
    if decoder:
        inputs["decoder_input_ids"] = torch.randint(
            0, config.vocab_size, (batch, shape.get("decoder_length", 4)), generator=generator
        )
    if config.type_vocab_size > 0:
        inputs["token_type_ids"] = torch.randint(0, config.type_vocab_size, (batch, length), generator=generator)
    if head in CHOICE_HEADS:
        inputs = {k: v[:, None].repeat(1, shape["choices"], 1) for k, v in inputs.items()}
    if "mc_token_ids" in inspect.signature(model.forward).parameters:  # GPT's [EXTRACT] token: the last real one
        last_real = torch.full(mask.shape[:1], length - 1) if shape["left"] else mask.sum(-1) - 1
        inputs["mc_token_ids"] = last_real[:, None].repeat(1, inputs["input_ids"].shape[1])
    return inputs


def first_logits(output) -> torch.Tensor | None:
    """The first output field whose name ends in "logits" (the prediction a ``labels`` argument scores)."""
    for name, value in output.items():
        if name.endswith("logits") and isinstance(value, torch.Tensor):
            return value
    return None


# The inputs with one entry per source token (padded or cut along their last dimension).
SOURCE_TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Heads whose inputs have a choice dimension: (B, C, T).
CHOICE_HEADS = ("ForMultipleChoice", "DoubleHeadsModel")
# Label arguments whose meaning is the same for every head that takes them.
BINARY_LABELS = ("next_sentence_label", "sentence_order_label")
POSITION_LABELS = ("start_positions", "end_positions")


def label_arguments(model) -> list[str]:
    parameters = inspect.signature(model.forward).parameters
    return [name for name in ("labels", *BINARY_LABELS, *POSITION_LABELS) if name in parameters]


def make_labels(model, inputs: dict[str, torch.Tensor], generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Labels for every label argument the head's forward takes, shaped by its unlabelled output:
    ``labels`` scoring (B, T, K) logits are (B, T) ids in [0, K) (-100 at padding and at random
    positions), scoring (B, K) logits (B,) ids in [0, K) (floats when K == 1: regression)."""
    with torch.no_grad():
        output = model(**inputs)
    main = inputs.get("input_ids", inputs.get("pixel_values"))
    batch = main.shape[0]
    labels = {}
    for name in label_arguments(model):
        if name in BINARY_LABELS:
            labels[name] = torch.randint(0, 2, (batch,), generator=generator)
        elif name in POSITION_LABELS:
            labels[name] = torch.randint(0, main.shape[-1], (batch,), generator=generator)
        else:
            logits = first_logits(output)
            if logits is None:
                continue
            classes = logits.shape[-1]
            token_mask = per_token_mask(model, inputs, logits)
            if token_mask is not None and logits.dim() == 3:
                ids = torch.randint(0, classes, tuple(logits.shape[:2]), generator=generator)
                drop = (torch.rand(ids.shape, generator=generator) < 0.5) | (token_mask == 0)
                labels[name] = ids.masked_fill(drop, IGNORE_INDEX)
            elif token_mask is not None:  # (B, T) scores of one binary decision per token (ELECTRA's discriminator)
                labels[name] = torch.randint(0, 2, tuple(logits.shape), generator=generator) * token_mask
            elif logits.dim() == 2:
                if classes == 1 and type(model).__name__.endswith(
                    ("ForSequenceClassification", "ForImageClassification")
                ):
                    labels[name] = torch.randn(batch, generator=generator)
                else:
                    labels[name] = torch.randint(0, classes, (batch,), generator=generator)
    return labels


SEQUENCE_HEADS = ("ForSequenceClassification", "ForMultipleChoice", "ForImageClassification")


def per_token_mask(model, inputs: dict[str, torch.Tensor], logits: torch.Tensor) -> torch.Tensor | None:
    """The (B, T) mask of the tokens ``logits`` score one by one: the source's attention_mask, or
    all of decoder_input_ids for a decoder's logits; None for a sequence-level prediction."""
    if type(model).__name__.endswith(SEQUENCE_HEADS):
        return None
    if "attention_mask" in inputs and tuple(logits.shape[:2]) == tuple(inputs["attention_mask"].shape):
        return inputs["attention_mask"]
    if "decoder_input_ids" in inputs and tuple(logits.shape[:2]) == tuple(inputs["decoder_input_ids"].shape):
        return torch.ones_like(inputs["decoder_input_ids"])
    return None
