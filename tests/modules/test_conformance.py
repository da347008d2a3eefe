"""A variant built from the shared hooks alone, inside the test: pre-LN, RMSNorm, no biases, a
language embedding, last-real-token summary, causal attention. Every encoder task base runs on it,
it saves and loads through the Auto classes, and declared as a decoder it generates with a cache
exactly as without. If this needs more than the hooks, the shared
layer has a gap that the next variant would have to work around."""

from __future__ import annotations

import pytest
import torch
from huggingface_hub.dataclasses import strict
from torch import nn

from hf_variants.models.configuration_base import VariantConfig, VariantDecoderConfig
from hf_variants.models.modeling_base import VariantPreTrainedModel
from hf_variants.models.papers import BERT
from hf_variants.modules.backbone import TransformerBackbone
from hf_variants.modules.decoder import DecoderBackbone
from hf_variants.modules.embeddings import TransformerEmbeddings
from hf_variants.modules.generation import DecoderForCausalLM
from hf_variants.modules.heads import SummaryClassifier
from hf_variants.modules.inputs import check_index_range
from hf_variants.modules.norms import RMSNorm
from hf_variants.modules.task_models import (
    EncoderForMaskedLM,
    EncoderForMultipleChoice,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
)
from hf_variants.registry import HEAD_AUTO_CLASSES, REGISTERED, SPECS, VariantSpec, register

MODEL_TYPE = "hfv_conformance_probe"


@strict
class ProbeConfig(VariantConfig):
    model_type = MODEL_TYPE

    num_languages: int = 3  # rows of the language embedding (XLM's n_langs)


class LanguageEmbeddings(TransformerEmbeddings):
    """Token + position embeddings plus a per-token language embedding (as XLM adds)."""

    extra_input_names = ("langs",)

    def __init__(self, config: ProbeConfig) -> None:
        super().__init__(**TransformerEmbeddings.config_kwargs(config))
        self.num_languages = config.num_languages
        self.language_embeddings = nn.Embedding(config.num_languages, config.hidden_size)

    def forward(self, input_ids, position_ids, token_type_ids=None, inputs_embeds=None, langs=None):
        embeddings = super().forward(input_ids, position_ids, token_type_ids, inputs_embeds)
        if langs is not None:
            check_index_range(langs, self.num_languages, "langs", "num_languages")
            embeddings = embeddings + self.language_embeddings(langs)
        return embeddings


class ProbePreTrainedModel(VariantPreTrainedModel):
    config_class = ProbeConfig
    base_model_prefix = "probe"


class ProbeModel(TransformerBackbone, ProbePreTrainedModel):
    def build_embeddings(self, config):
        return LanguageEmbeddings(config)

    def build_pooler(self, config):
        return None


class ProbeForSequenceClassification(EncoderForSequenceClassification, ProbePreTrainedModel):
    backbone_class = ProbeModel
    uses_pooler = False
    classifier_class = SummaryClassifier


class ProbeForTokenClassification(EncoderForTokenClassification, ProbePreTrainedModel):
    backbone_class = ProbeModel


class ProbeForQuestionAnswering(EncoderForQuestionAnswering, ProbePreTrainedModel):
    backbone_class = ProbeModel


class ProbeForMaskedLM(EncoderForMaskedLM, ProbePreTrainedModel):
    backbone_class = ProbeModel


class ProbeForMultipleChoice(EncoderForMultipleChoice, ProbePreTrainedModel):
    backbone_class = ProbeModel
    uses_pooler = False
    reads_summary_only = True

    def __init__(self, config) -> None:
        super().__init__(config)
        self.classifier = SummaryClassifier(config.hidden_size, 1, 0.0)
        self.post_init()


HEADS = {
    "Model": ProbeModel,
    "ForSequenceClassification": ProbeForSequenceClassification,
    "ForTokenClassification": ProbeForTokenClassification,
    "ForQuestionAnswering": ProbeForQuestionAnswering,
    "ForMaskedLM": ProbeForMaskedLM,
    "ForMultipleChoice": ProbeForMultipleChoice,
}


def probe_config(**overrides) -> ProbeConfig:
    fields = dict(
        vocab_size=50,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=32,
        type_vocab_size=0,
        pre_layer_norm=True,
        norm_type="rms_norm",
        layer_norm_eps=1e-6,
        use_bias=False,
        summary_type="last_real",
        is_decoder=True,
        num_labels=3,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return ProbeConfig(**{**fields, **overrides})


def batch(seed: int = 0, length: int = 9) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 50, (3, length), generator=g)
    mask = torch.ones(3, length, dtype=torch.long)
    mask[1, length - 3 :] = 0
    mask[2, length // 2 :] = 0
    return {
        "input_ids": ids.masked_fill(mask == 0, 0),
        "attention_mask": mask,
        "langs": torch.randint(0, 3, (3, length), generator=g),
    }


def test_the_hooks_build_what_the_config_asks_for():
    model = ProbeForSequenceClassification(probe_config())
    assert any(isinstance(m, RMSNorm) for m in model.modules())
    assert not any(isinstance(m, nn.LayerNorm) for m in model.probe.encoder.modules())
    assert model.probe.encoder.final_layer_norm is not None  # pre-LN closes the stack with a norm
    linear_biases = [
        n for n, m in model.probe.encoder.named_modules() if isinstance(m, nn.Linear) and m.bias is not None
    ]
    assert linear_biases == []
    assert model.probe.pooler is None


@pytest.mark.parametrize("head", sorted(HEADS))
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_every_task_base_runs(head, attn):
    config = probe_config()
    config._attn_implementation = attn
    model = HEADS[head](config).eval()
    inputs = batch()
    if head == "ForMultipleChoice":
        inputs = {k: v[:, None].repeat(1, 2, 1) for k, v in inputs.items()}
    out = model(**inputs)
    main = out[0]
    assert torch.isfinite(main).all()


def test_attention_is_causal_and_the_language_embedding_is_used():
    model = ProbeModel(probe_config()).eval()
    inputs = batch()
    reference = model(**inputs).last_hidden_state
    changed = dict(inputs, input_ids=inputs["input_ids"].clone())
    changed["input_ids"][0, 5] = (changed["input_ids"][0, 5] % 49) + 1
    out = model(**changed).last_hidden_state
    torch.testing.assert_close(out[0, :5], reference[0, :5])  # earlier positions do not see position 5
    assert (out[0, 5:] - reference[0, 5:]).abs().max() > 1e-4
    other_languages = dict(inputs, langs=(inputs["langs"] + 1) % 3)
    assert (model(**other_languages).last_hidden_state - reference).abs().max() > 1e-4
    with pytest.raises(ValueError, match="langs"):
        model(**dict(inputs, langs=torch.full_like(inputs["langs"], 3)))


@pytest.mark.parametrize("padding_free", [False, True])
def test_last_real_token_summary_is_padding_invariant(padding_free):
    """The classifier reads each row's last real token: a row padded on the right gives the logits
    of the same row alone (causal attention never lets it see the padding)."""
    model = ProbeForSequenceClassification(probe_config(padding_free=padding_free)).eval()
    inputs = batch()
    logits = model(**inputs).logits
    for row in range(3):
        length = int(inputs["attention_mask"][row].sum())
        alone = {k: v[row : row + 1, :length] for k, v in inputs.items()}
        torch.testing.assert_close(model(**alone).logits[0], logits[row], atol=1e-5, rtol=1e-4)


def test_save_and_load_through_the_auto_classes(tmp_path, monkeypatch):
    """Declared by one spec, as a variant folder would: registered, saved (safetensors + remote
    code), reloaded through the Auto classes with identical outputs."""
    # This test's variant leaves no trace in the registry for other tests.
    monkeypatch.setattr("hf_variants.registry.SPECS", dict(SPECS))
    monkeypatch.setattr("hf_variants.registry.REGISTERED", dict(REGISTERED))
    register(VariantSpec(name=MODEL_TYPE.removeprefix("hfv_"), config_class=ProbeConfig, classes=HEADS, paper=BERT))
    for head, auto_class in ((h, HEAD_AUTO_CLASSES[h]) for h in HEADS):
        model = HEADS[head](probe_config()).eval()
        model.save_pretrained(tmp_path / head)
        assert (tmp_path / head / "model.safetensors").is_file()
        reloaded = auto_class.from_pretrained(tmp_path / head).eval()
        assert type(reloaded) is HEADS[head]
        inputs = batch()
        if head == "ForMultipleChoice":
            inputs = {k: v[:, None].repeat(1, 2, 1) for k, v in inputs.items()}
        torch.testing.assert_close(reloaded(**inputs)[0], model(**inputs)[0], atol=1e-6, rtol=1e-5)


# ----------------------------------------------------------------------------- as a decoder
@strict
class ProbeDecoderConfig(VariantDecoderConfig):
    model_type = "hfv_conformance_probe_decoder"

    num_languages: int = 3


class ProbeDecoderPreTrainedModel(VariantPreTrainedModel):
    config_class = ProbeDecoderConfig
    base_model_prefix = "probe"


class ProbeDecoderModel(DecoderBackbone, ProbeDecoderPreTrainedModel):
    def build_embeddings(self, config):
        return LanguageEmbeddings(config)


class ProbeForCausalLM(DecoderForCausalLM, ProbeDecoderPreTrainedModel):
    backbone_class = ProbeDecoderModel


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_generate_with_cache_equals_recompute(attn):
    """The same hooks declared as a decoder generate through transformers' generate(): greedy with
    the cache gives the tokens of recomputing every prefix, on a left-padded batch."""
    fields = {k: v for k, v in probe_config().to_dict().items() if k in ProbeDecoderConfig.__dataclass_fields__}
    config = ProbeDecoderConfig(**{**fields, "initializer_range": 0.3, "bos_token_id": 1})
    config._attn_implementation = attn
    model = ProbeForCausalLM(config).eval()
    assert any(isinstance(m, RMSNorm) for m in model.modules())
    ids = torch.randint(2, 50, (3, 6), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    mask[1, :2] = 0  # left padding
    ids = ids.masked_fill(mask == 0, 0)
    kwargs = dict(input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0)
    cached = model.generate(**kwargs, use_cache=True)
    recomputed = model.generate(**kwargs, use_cache=False)
    assert cached.shape == (3, 12)
    torch.testing.assert_close(cached, recomputed, atol=0, rtol=0)
