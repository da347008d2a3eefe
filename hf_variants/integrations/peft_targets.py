"""Default PEFT target modules for every registered variant.

``peft`` picks the modules an adapter wraps from a table keyed by ``config.model_type`` (for
``bert``: ``["query", "value"]``), so ``LoraConfig(task_type="SEQ_CLS")`` works without
``target_modules``. Our model types (``hfv_*``) are not in those tables; :func:`register_peft_targets`
adds every registered spec, with names read from the modules a tiny instance of the variant
builds on the meta device (no table per variant: a variant added later is covered):

- LoRA and the methods whose tables peft copies from LoRA's (LoHa, LoKr, AdaLoRA, ...): the
  ``nn.Linear`` projections of each variant's attention (``qkv``, the fused self-attention input
  projection; ``query``/``key_value`` of cross-attention). The fused ``qkv`` means LoRA adapts
  queries, keys and values together (peft's BERT default adapts query and value only).
  Variants whose attention keeps per-head parameter tensors instead of ``nn.Linear``
  (XLNet, Transformer-XL) get the feed-forward projections (``up``, ``down``) instead.
- (IA)^3: the projections producing keys and values (``qkv``, ``key_value``) plus the
  feed-forward output projection ``down``, which is also its "feedforward" module (IA)^3 scales
  the input of (Liu et al. 2022 scale keys, values and the FFN's inner activations).
"""

from __future__ import annotations

import torch
from torch import nn

from ..registry import SPECS, VariantSpec

# Attention projections whose output holds keys and values ((IA)^3 scales those).
_KEY_VALUE_PROJECTIONS = ("qkv", "key_value")


def _linear_children(module: nn.Module) -> list[str]:
    return [name for name, child in module.named_children() if isinstance(child, nn.Linear)]


def variant_target_modules(spec: VariantSpec) -> dict[str, list[str]]:
    """``{"lora": [...], "ia3": [...], "ia3_feedforward": [...]}``: module-name suffixes of
    ``spec``'s models (the peft defaults for its model_type)."""
    with torch.device("meta"):  # the default config's modules, allocated nowhere: only their names matter
        model = spec.classes["Model"](spec.config_class())
    attention, feed_forward = set(), set()
    for module in model.modules():
        # The blocks say what they are (FeedForward, RelativeAttention and a variant's own blocks
        # such as BertSelfAttention / BertFFN declare ``adapter_role``).
        role = getattr(type(module), "adapter_role", None)
        if role == "attention":
            attention.update(_linear_children(module))
        elif role == "feed_forward":
            feed_forward.update(_linear_children(module))
    if not feed_forward:
        raise ValueError(f'variant {spec.name!r}: found no feed-forward module (adapter_role "feed_forward") to adapt')
    attention_inputs = sorted(name for name in attention if name != "out")  # the output projection stays frozen
    lora = attention_inputs or sorted(feed_forward)
    ia3_feedforward = ["down"] if "down" in feed_forward else sorted(feed_forward)
    ia3 = sorted({name for name in attention if name in _KEY_VALUE_PROJECTIONS} | set(ia3_feedforward))
    return {"lora": lora, "ia3": ia3, "ia3_feedforward": ia3_feedforward}


def register_peft_targets(specs: list[VariantSpec] | None = None) -> dict[str, dict[str, list[str]]]:
    """Add every spec's defaults to peft's target-module tables (no-op without peft installed).

    Returns model_type -> the names registered (empty when peft is missing)."""
    try:
        from peft.utils import constants
    except ImportError:
        return {}
    lora_table = constants.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING
    # The tables peft builds as copies of LoRA's (same module kinds: linear layers).
    lora_like = [
        table
        for name, table in vars(constants).items()
        if name.endswith("_TARGET_MODULES_MAPPING")
        and isinstance(table, dict)
        and "bert" in table
        and table.get("bert") == lora_table.get("bert")
        and "IA3" not in name
    ]
    registered = {}
    for spec in specs if specs is not None else list(SPECS.values()):
        targets = variant_target_modules(spec)
        for table in lora_like:
            table[spec.model_type] = list(targets["lora"])
        constants.TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING[spec.model_type] = list(targets["ia3"])
        constants.TRANSFORMERS_MODELS_TO_IA3_FEEDFORWARD_MODULES_MAPPING[spec.model_type] = list(
            targets["ia3_feedforward"]
        )
        registered[spec.model_type] = targets
    return registered
