"""Prefix tuning on the memory models (XLNet, Transformer-XL): peft's key/value prefix is a learned
memory (``hf_variants.modules.relative_attention.KeyValuePrefix``).

The defining check: the keys and values a memory produces, handed in as a prefix, give exactly the
outputs of that memory handed in as ``mems``. Then peft's PrefixTuning trains a few steps (the
backbone stays frozen, the loss falls) and its saved adapter reloads with the same outputs.
"""

from __future__ import annotations

import pytest
import torch
from peft import PeftModel, PrefixTuningConfig, TaskType, get_peft_model
from transformers.cache_utils import DynamicCache

from hf_variants.registry import SPECS
from tests.common.tiny_variants import tiny_config

MEMORY_VARIANTS = ["xlnet", "transfo_xl"]


def tiny(name: str, head: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return SPECS[f"hfv_{name}"].classes[head](tiny_config(SPECS[f"hfv_{name}"])).eval()


def token_ids(config, batch: int = 2, length: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.randint(3, config.vocab_size, (batch, length), generator=torch.Generator().manual_seed(seed))


def memory_as_prefix(model, mems: tuple[torch.Tensor, ...]) -> DynamicCache:
    """Each layer's memory (M, B, H) through that layer's key and value projections: (B, heads, M, D)."""
    cache = DynamicCache()
    for depth, (layer, memory) in enumerate(zip(model.layers, mems)):
        key, value = layer.attention.keys_values(memory.transpose(0, 1))
        cache.update(key, value, depth)
    return cache


@pytest.mark.parametrize("name", MEMORY_VARIANTS)
def test_a_memory_given_as_key_value_prefix_gives_the_outputs_of_mems(name):
    model = tiny(name, "Model")
    config = model.config
    with torch.no_grad():
        mems = model(token_ids(config, seed=0), use_mems=True).mems
        next_segment = token_ids(config, seed=1)
        with_mems = model(next_segment, mems=mems).last_hidden_state
        with_prefix = model(next_segment, past_key_values=memory_as_prefix(model, mems)).last_hidden_state
        without = model(next_segment).last_hidden_state
    torch.testing.assert_close(with_prefix, with_mems, atol=1e-5, rtol=0)
    assert not torch.allclose(with_prefix, without, atol=1e-3)  # the memory matters


@pytest.mark.parametrize("name", MEMORY_VARIANTS)
def test_the_prefix_must_be_a_cache_of_the_model_shape(name):
    model = tiny(name, "Model")
    config = model.config
    ids = token_ids(config)
    with pytest.raises(ValueError, match="Cache"):
        model(ids, past_key_values=((torch.zeros(1), torch.zeros(1)),))
    cache = DynamicCache()
    for depth in range(config.num_hidden_layers):
        cache.update(
            torch.zeros(2, config.num_attention_heads, 3, 5), torch.zeros(2, config.num_attention_heads, 3, 5), depth
        )
    with pytest.raises(ValueError, match="token_dim"):
        model(ids, past_key_values=cache)


# (variant, head, peft task type, labels for the ids): a classifier for XLNet, the LM for Transformer-XL.
TRAINING_CASES = [
    ("xlnet", "ForSequenceClassification", TaskType.SEQ_CLS, lambda ids: torch.tensor([0, 1])),
    ("transfo_xl", "LMHeadModel", TaskType.FEATURE_EXTRACTION, lambda ids: ids),
]


@pytest.mark.parametrize("name,head,task,labels_for", TRAINING_CASES, ids=[c[0] for c in TRAINING_CASES])
def test_prefix_tuning_trains_the_prefix_only_and_reloads(name, head, task, labels_for, tmp_path):
    model = tiny(name, head)
    config = model.config
    backbone_weights = {key: value.clone() for key, value in model.base_model.state_dict().items()}
    head_dim = model.base_model.layers[0].attention.head_dim
    peft_config = PrefixTuningConfig(
        task_type=task, num_virtual_tokens=4, token_dim=head_dim * config.num_attention_heads
    )
    peft_model = get_peft_model(model, peft_config)
    ids = token_ids(config)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels_for(ids)}
    optimizer = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=1e-2)
    peft_model.train()
    losses = []
    for _ in range(8):
        loss = peft_model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0], losses
    peft_model.eval()
    # The backbone stays frozen (peft also trains a classifier head, as for every SEQ_CLS model).
    for key, value in peft_model.get_base_model().base_model.state_dict().items():
        torch.testing.assert_close(value, backbone_weights[key], atol=0, rtol=0, msg=f"{key} moved")
    inputs = {key: value for key, value in batch.items() if key != "labels"}
    with torch.no_grad():
        tuned = peft_model(**inputs).logits
    peft_model.save_pretrained(tmp_path / "adapter")
    reloaded = PeftModel.from_pretrained(tiny(name, head), tmp_path / "adapter").eval()
    with torch.no_grad():
        torch.testing.assert_close(reloaded(**inputs).logits, tuned, atol=1e-6, rtol=0)
