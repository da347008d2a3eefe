"""The encoder variants the benchmarks compare with transformers, declared as data.

Each :class:`EncoderVariant` names, per task, the transformers class and ours, how its
configuration is built (a named config of ``modeling_configs/`` translated to transformers' config
class by the variant's own key map, or BERT's shapes) and how it writes the real sentences as ids
(:class:`workloads.TokenLayout`). :func:`build_models` builds transformers' model with a fixed seed
and converts it with ``hf_variants.from_transformers``, so both sides hold identical weights.

ELECTRA's joint pretraining model has no transformers class: :class:`TransformersElectraPretraining`
assembles the same computation from transformers' ``ElectraForMaskedLM`` (generator) and
``ElectraForPreTraining`` (discriminator), converted from our joint model with
``hf_variants.to_transformers``.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Callable

import torch
import transformers
from torch import nn
from transformers.utils import ModelOutput

import hf_variants
from benchmarks.workloads import BERT_LAYOUT, TokenLayout
from hf_variants.conversion import WEIGHTS
from hf_variants.models.electra.modeling_electra import SHARED_EMBEDDING_MODULES, gumbel_max_sample

# bert-mini and bert-base as transformers.BertConfig fields (the named configs' architectures).
BERT_SHAPES = {
    "mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}
IMAGE_CLASSES = 10  # Fashion-MNIST


def bert_config(shape: str, their_class: type) -> transformers.PreTrainedConfig:
    return transformers.BertConfig(**BERT_SHAPES[shape], num_labels=2)


def named_config_for(shape: str, their_class: type, num_labels: int = 2) -> transformers.PreTrainedConfig:
    """The named config ``shape`` (e.g. "roberta-mini") as ``their_class``'s config, translated
    by the variant's own key map (the translation ``to_transformers`` uses)."""
    ours = hf_variants.named_config(shape, num_labels=num_labels)
    return WEIGHTS[ours.model_type].config_to_family(ours, their_class.config_class)


@dataclass(frozen=True)
class EncoderVariant:
    """One variant's side-by-side declaration.

    classes: task -> (transformers class name, hf_variants class name); tasks are "cls" (sequence
        classification), "tokens" (token classification), "mlm" (masked LM), "image" (image
        classification) and "rtd" (ELECTRA's joint pretraining).
    config: (shape, transformers class) -> transformers config; shape is "mini"/"base" for BERT,
        else a named config.
    layout: how the real sentences are written as this variant's ids.
    padding_free: whether ours runs its padding-free path (XLNet: left-padded rows in length buckets).
    extra_inputs: further model arguments, the same for both sides.
    """

    classes: dict[str, tuple[str, str]]
    config: Callable[[str, type], transformers.PreTrainedConfig]
    layout: TokenLayout = BERT_LAYOUT
    padding_free: bool = True
    num_labels: int = 2
    extra_inputs: dict = field(default_factory=dict)


VARIANTS = {
    "bert": EncoderVariant(
        classes={
            "cls": ("BertForSequenceClassification", "BertForSequenceClassification"),
            "tokens": ("BertForTokenClassification", "BertForTokenClassification"),
            "mlm": ("BertForMaskedLM", "BertForMaskedLM"),
        },
        config=bert_config,
    ),
    "roberta": EncoderVariant(
        classes={"cls": ("RobertaForSequenceClassification", "RobertaForSequenceClassification")},
        config=named_config_for,
        layout=TokenLayout(vocab_size=50265, cls_id=0, sep_id=2, pad_id=1, segment_ids=False),
    ),
    "xlm": EncoderVariant(
        classes={"cls": ("XLMForSequenceClassification", "XLMForSequenceClassification")},
        config=named_config_for,
        layout=TokenLayout(vocab_size=30145, cls_id=0, sep_id=1, pad_id=2, segment_ids=False),
    ),
    "albert": EncoderVariant(
        classes={"cls": ("AlbertForSequenceClassification", "AlbertForSequenceClassification")},
        config=named_config_for,
        layout=TokenLayout(vocab_size=30000, cls_id=2, sep_id=3, pad_id=0),
    ),
    "electra": EncoderVariant(
        classes={
            "cls": ("ElectraForSequenceClassification", "ElectraForSequenceClassification"),
            "rtd": ("ElectraForPreTraining", "ElectraForPreTraining"),
        },
        config=named_config_for,
    ),
    "xlnet": EncoderVariant(
        classes={"cls": ("XLNetForSequenceClassification", "XLNetForSequenceClassification")},
        config=named_config_for,
        # XLNet's SentencePiece specials: <sep>=4, <cls>=3, <pad>=5; "A <sep> <cls>", left padding.
        layout=TokenLayout(
            vocab_size=32000, cls_id=3, sep_id=4, pad_id=5, cls_last=True, padding_side="left", segment_ids=False
        ),
        # A classifier feeds no next segment: neither side caches every layer's states as mems
        # (in eval mode both would by default, use_mems_eval=True).
        extra_inputs={"use_mems": False},
    ),
    "vit": EncoderVariant(
        classes={"image": ("ViTForImageClassification", "ViTForImageClassification")},
        config=lambda shape, their_class: named_config_for(shape, their_class, IMAGE_CLASSES),
        num_labels=IMAGE_CLASSES,
    ),
}


def _configure_ours(model: nn.Module, variant: EncoderVariant) -> None:
    """Ours runs its fast paths, set explicitly whatever the config defaults: SDPA (also where
    transformers' class is eager-only), padding-free where the variant has it, sparse MLM."""
    model.config._attn_implementation = "sdpa"
    if hasattr(model.config, "sparse_prediction"):
        model.config.sparse_prediction = True
    if hasattr(model.config, "padding_free"):
        model.config.padding_free = variant.padding_free


def build_models(
    variant_name: str, task: str, shape: str, which: tuple[str, ...] = ("transformers", "ours")
) -> dict[str, nn.Module]:
    """{"transformers": model, "ours": model}, or the one side in ``which``.

    With both sides, ours is converted from theirs (identical weights). With one side only that
    model is built (from the same configuration), so a memory process holds nothing else and
    carries no heap left behind by a second model. transformers' model runs SDPA where its class
    has it (XLM and XLNet are eager-only there).
    """
    variant = VARIANTS[variant_name]
    if task == "rtd":
        return build_electra_pretraining(shape, which)
    their_name, our_name = variant.classes[task]
    their_class, our_class = getattr(transformers, their_name), getattr(hf_variants, our_name)
    torch.manual_seed(0)
    config = variant.config(shape, their_class)
    config._attn_implementation = "sdpa" if their_class._supports_sdpa else "eager"
    models = {}
    if "transformers" in which or len(which) > 1:
        models["transformers"] = their_class(config)
    if "ours" in which:
        if "transformers" in models:
            models["ours"] = hf_variants.from_transformers(models["transformers"])
        else:
            models["ours"] = our_class(WEIGHTS[our_class.config_class.model_type].config_to_ours(config))
        _configure_ours(models["ours"], variant)
    return {name: models[name] for name in which}


# ----------------------------------------------------------------------------- ELECTRA
class TransformersElectraPretraining(nn.Module):
    """ELECTRA's joint pretraining step assembled from transformers' two classes, as a user of
    transformers would write it: the generator (``ElectraForMaskedLM``) and the discriminator
    (``ElectraForPreTraining``) share the word, position and segment tables and the embedding
    LayerNorm (the generator's decoder stays tied to the shared word table); the generator's MLM
    loss; one replacement per masked position sampled by Gumbel-max (the same function ours uses,
    no gradient); discriminator labels = the sample differs from the original; loss =
    ``generator_weight`` x MLM + ``discriminator_weight`` x the discriminator's BCE.
    """

    def __init__(
        self,
        generator: transformers.ElectraForMaskedLM,
        discriminator: transformers.ElectraForPreTraining,
        config: hf_variants.ElectraConfig,
    ) -> None:
        super().__init__()
        for name in SHARED_EMBEDDING_MODULES:
            their_name = "LayerNorm" if name == "layer_norm" else name
            setattr(generator.electra.embeddings, their_name, getattr(discriminator.electra.embeddings, their_name))
        generator.generator_lm_head.weight = discriminator.electra.embeddings.word_embeddings.weight
        self.generator, self.discriminator, self.config = generator, discriminator, config

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        labels: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> ModelOutput:
        """input_ids, attention_mask, token_type_ids, labels: (B, T), labels -100 where not masked."""
        segments = dict(attention_mask=attention_mask, token_type_ids=token_type_ids)
        generated = self.generator(input_ids, **segments, labels=labels)
        selected = labels != -100
        original = torch.where(selected, labels, input_ids)
        corrupted = original.clone()
        corrupted[selected] = gumbel_max_sample(generated.logits[selected], self.config.sampling_temperature)
        detected = self.discriminator(corrupted, **segments, labels=(corrupted != original).long())
        loss = self.config.generator_weight * generated.loss + self.config.discriminator_weight * detected.loss
        return ModelOutput(loss=loss)


def _transformers_electra_halves(ours: hf_variants.ElectraForPreTraining) -> TransformersElectraPretraining:
    detector = hf_variants.ElectraForReplacedTokenDetection(ours.config)
    detector.load_state_dict(ours.state_dict(), strict=False)  # the discriminator's weights, same names
    generator = hf_variants.to_transformers(ours.generator_as_masked_lm())
    model = TransformersElectraPretraining(generator, hf_variants.to_transformers(detector), ours.config)
    for module in (model.generator, model.discriminator):
        module.config._attn_implementation = "sdpa"
    return model


def build_electra_pretraining(shape: str, which: tuple[str, ...]) -> dict[str, nn.Module]:
    """Our joint ``ElectraForPreTraining`` (the named config ``shape``, seeded) and the same
    computation assembled from transformers' two classes with identical weights (converted from
    ours by ``to_transformers``: transformers has no joint class to convert from). A process that
    measures transformers' side alone drops ours once converted."""
    torch.manual_seed(0)
    ours = hf_variants.ElectraForPreTraining(hf_variants.named_config(shape))
    _configure_ours(ours, VARIANTS["electra"])
    models = {"ours": ours}
    if "transformers" in which:
        models["transformers"] = _transformers_electra_halves(ours)
    if "ours" not in which:
        del models["ours"], ours
        gc.collect()
    return {name: models[name] for name in which}
