"""peft's LoRA, (IA)^3 and prefix tuning on every registered variant and head.

Parametrised from the registry: every head peft has a task type for (plus the bare model), so a
variant added later is covered without new code. Default target modules come from
``hf_variants.integrations.peft_targets`` (no ``target_modules`` below). Adapters start from random values
(``init_lora_weights=False`` / ``init_ia3_weights=False``) so they change the outputs, and the
checks compare: adapter on vs off, merged vs unmerged, saved and reloaded vs in memory.
"""

from __future__ import annotations

import pytest
import torch
from peft import IA3Config, LoraConfig, PeftModel, PrefixTuningConfig, TaskType, get_peft_model
from transformers.cache_utils import DynamicCache

from hf_variants.integrations.peft_targets import variant_target_modules
from hf_variants.registry import SPECS
from tests.common.tiny_variants import CONTIGUOUS_TEXT_ONLY, is_text, tiny_config, tiny_inputs, variant_heads

# Head -> peft task type (None: the plain PeftModel, which passes every input through).
HEAD_TASK_TYPES = {
    "Model": None,
    "ForSequenceClassification": TaskType.SEQ_CLS,
    "ForTokenClassification": TaskType.TOKEN_CLS,
    "ForQuestionAnswering": TaskType.QUESTION_ANS,
    "ForCausalLM": TaskType.CAUSAL_LM,
    "LMHeadModel": TaskType.CAUSAL_LM,
    "ForConditionalGeneration": TaskType.SEQ_2_SEQ_LM,
    "ForImageClassification": None,
    "ForMaskedLM": None,
    "ForMultipleChoice": None,
}
CASES = [pytest.param(spec, head, id=f"{spec.name}-{head}") for spec, head in variant_heads(set(HEAD_TASK_TYPES))]
# Causal-LM task type needs generation (prepare_inputs_for_generation); Transformer-XL's LM head
# generates through its memory instead: adapt it as a plain PeftModel.
PLAIN_PEFT_MODEL = {("transfo_xl", "LMHeadModel")}

# Where prefix tuning cannot reach the attention (skipped with the reason).
PREFIX_UNSUPPORTED = {
    "vit": "peft's prompt learning builds its inputs from input_ids / inputs_embeds; ViT takes pixel_values",
}
# Encoder-decoders get the prefix in the decoder (peft's SEQ_2_SEQ_LM, as for transformers' T5).
PREFIX_UNSUPPORTED_HEADS = {
    (name, head): "peft gives an encoder-only head of an encoder-decoder a one-stack prefix; its encoder takes none"
    for name in ("t5", "transformer")
    for head in ("Model", "ForSequenceClassification", "ForQuestionAnswering")
}
PREFIX_UNSUPPORTED_HEADS[(None, "ForMultipleChoice")] = (
    "peft's prompt learning prepends its prefix mask to 2-D masks; multiple-choice inputs are (B, choices, T)"
)


def task_type(spec, head):
    return None if (spec.name, head) in PLAIN_PEFT_MODEL else HEAD_TASK_TYPES[head]


def first_tensor(output) -> torch.Tensor:
    """The output's first floating tensor (logits, or the last hidden state)."""
    for value in output.values():
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value
    raise AssertionError(f"no float tensor in {list(output.keys())}")


def base_and_inputs(spec, head):
    config = tiny_config(spec)
    torch.manual_seed(0)
    model = spec.classes[head](config).eval()
    return model, tiny_inputs(spec, head, config)


def check_adapter_round_trip(spec, head, peft_config, tmp_path, merge: str | None = "unload") -> None:
    """The adapter changes the outputs and ``disable_adapter`` restores the base ones; save + load
    gives the adapted outputs back; merging keeps them (<= 1e-5): ``merge="unload"`` through
    ``merge_and_unload`` (our class comes back), ``"in_place"`` through ``merge_adapter`` and back
    with ``unmerge_adapter``."""
    model, inputs = base_and_inputs(spec, head)
    with torch.no_grad():
        base = first_tensor(model(**inputs)).clone()
    peft_model = get_peft_model(model, peft_config).eval()
    trainable, total = peft_model.get_nb_trainable_parameters()
    assert 0 < trainable < total
    with torch.no_grad():
        adapted = first_tensor(peft_model(**inputs)).clone()
        assert (adapted - base).abs().max() > 1e-6, "the adapter does not change the outputs"
        if not peft_config.is_prompt_learning:  # peft's disable_adapter needs generation for prompts
            with peft_model.disable_adapter():
                torch.testing.assert_close(first_tensor(peft_model(**inputs)), base, atol=1e-6, rtol=0)
    peft_model.save_pretrained(tmp_path / "adapter")
    fresh, _ = base_and_inputs(spec, head)
    reloaded = PeftModel.from_pretrained(fresh, tmp_path / "adapter").eval()
    with torch.no_grad():
        torch.testing.assert_close(first_tensor(reloaded(**inputs)), adapted, atol=1e-6, rtol=0)
        if merge == "in_place":
            reloaded.merge_adapter()
            torch.testing.assert_close(first_tensor(reloaded(**inputs)), adapted, atol=1e-5, rtol=0)
            reloaded.unmerge_adapter()
            torch.testing.assert_close(first_tensor(reloaded(**inputs)), adapted, atol=1e-5, rtol=0)
        elif merge == "unload":
            merged = reloaded.merge_and_unload().eval()
            assert type(merged) is spec.classes[head]
            torch.testing.assert_close(first_tensor(merged(**inputs)), adapted, atol=1e-5, rtol=0)


@pytest.mark.parametrize("spec,head", CASES)
def test_lora_without_target_modules(spec, head, tmp_path):
    config = LoraConfig(task_type=task_type(spec, head), r=4, init_lora_weights=False)
    check_adapter_round_trip(spec, head, config, tmp_path)


@pytest.mark.parametrize("spec,head", CASES)
def test_ia3_without_target_modules(spec, head, tmp_path):
    # peft 0.21's (IA)^3 merge_and_unload copies `.weight` onto a kept head (modules_to_save), so it
    # fails on any head that is not a bare nn.Linear (transformers' RoBERTa head too): merge in place.
    config = IA3Config(task_type=task_type(spec, head), init_ia3_weights=False)
    check_adapter_round_trip(spec, head, config, tmp_path, merge="in_place" if config.task_type else "unload")


@pytest.mark.parametrize("spec,head", CASES)
def test_prefix_tuning(spec, head, tmp_path):
    reason = (
        PREFIX_UNSUPPORTED.get(spec.name)
        or PREFIX_UNSUPPORTED_HEADS.get((spec.name, head))
        or PREFIX_UNSUPPORTED_HEADS.get((None, head))
    )
    if reason is not None:
        pytest.skip(reason)
    kind = task_type(spec, head) or TaskType.FEATURE_EXTRACTION
    model_config = tiny_config(spec)
    # peft sizes each prefix key as hidden_size / heads unless told: Transformer-XL's heads are wider.
    head_dim = getattr(model_config, "head_dim", None) or model_config.hidden_size // model_config.num_attention_heads
    config = PrefixTuningConfig(
        task_type=kind, num_virtual_tokens=3, token_dim=head_dim * model_config.num_attention_heads
    )
    check_adapter_round_trip(spec, head, config, tmp_path, merge=None)  # a prefix has nothing to merge


@pytest.mark.parametrize(
    "spec", [s for s in SPECS.values() if is_text(s) and s.name not in PREFIX_UNSUPPORTED], ids=lambda s: s.name
)
def test_masked_prefix_changes_nothing(spec):
    """A key/value prefix the attention mask hides leaves every output as without it: the prefix
    really enters the attention (a visible one changes the outputs), behind the mask, and the
    tokens' positions are not shifted by it (encoders)."""
    head = "Model"
    model, inputs = base_and_inputs(spec, head)
    config = model.config
    if "decoder_input_ids" in inputs:
        pytest.skip(f"{spec.name}: the encoder-decoder's prefix goes to the decoder (test_prefix_tuning)")
    prefix_length, heads = 3, config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads

    def with_prefix(visible: bool) -> torch.Tensor:
        cache = DynamicCache()
        generator = torch.Generator().manual_seed(1)
        for layer in range(config.num_hidden_layers):
            key, value = (torch.randn(2, heads, prefix_length, head_dim, generator=generator) for _ in range(2))
            cache.update(key, value, layer)
        prefix_mask = torch.full((2, prefix_length), int(visible), dtype=inputs["attention_mask"].dtype)
        mask = torch.cat([prefix_mask, inputs["attention_mask"]], dim=1)
        with torch.no_grad():
            return model(**{**inputs, "attention_mask": mask}, past_key_values=cache).last_hidden_state

    with torch.no_grad():
        plain = model(**inputs).last_hidden_state
    real = inputs["attention_mask"].bool()
    if spec.name in CONTIGUOUS_TEXT_ONLY:
        pytest.skip(
            f"{spec.name} takes no padding mask, so no prefix can be hidden (test_prefix_memory.py covers its prefix)"
        )
    if config.is_decoder:
        pytest.skip(f"{spec.name} is a decoder: a cache shifts its positions like generation (tested there)")
    torch.testing.assert_close(with_prefix(False)[real], plain[real], atol=1e-5, rtol=0)
    assert not torch.allclose(with_prefix(True)[real], plain[real], atol=1e-3)


def test_encoders_ignore_use_cache():
    """As transformers' encoder models (tests/models/bert/test_encoder_use_cache_ignored.py); a
    cache that is not a transformers Cache is still refused."""
    spec = SPECS["hfv_bert"]
    model, inputs = base_and_inputs(spec, "Model")
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs, use_cache=True).last_hidden_state, model(**inputs).last_hidden_state)
    with pytest.raises(ValueError, match="Cache"):
        model(**inputs, past_key_values=((torch.zeros(1),),))


@pytest.mark.parametrize("spec", list(SPECS.values()), ids=lambda s: s.name)
def test_default_targets_are_registered_with_peft(spec):
    """peft's own tables name our modules, and each named module exists in every layer."""
    from peft.utils import constants

    targets = variant_target_modules(spec)
    assert constants.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING[spec.model_type] == targets["lora"]
    assert constants.TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING[spec.model_type] == targets["ia3"]
    assert set(targets["ia3_feedforward"]) <= set(targets["ia3"])
    model = spec.classes["Model"](tiny_config(spec))
    peft_model = get_peft_model(model, LoraConfig(r=2))
    wrapped = [name for name, module in peft_model.named_modules() if hasattr(module, "lora_A")]
    layer_modules = {
        id(m) for name, m in model.named_modules() if type(m).__name__.endswith(("Layer", "Block"))
    }  # shared layers count once (GPT's GPTBlock and T5's T5Block, as in transformers)
    assert len(wrapped) >= len(layer_modules) >= 1, wrapped
    assert {name.rsplit(".", 1)[-1] for name in wrapped} == set(targets["lora"])
