"""Shared checks for every encoder variant (transformers' tester pattern).

A variant's test module builds an :class:`EncoderTester` with its config class and model
classes and parametrizes the ``check_*`` functions over its heads. A variant whose pretraining
head needs extra inputs passes ``extra_inputs`` (head -> callable(tester, input_ids) -> dict).
Variants with other inputs than token ids (ViT's pixels) subclass the tester, override
:meth:`EncoderTester.inputs`, name their heads' outputs in ``main_outputs`` and run the checks
that do not depend on padding (loss, gradient flow, save/load, backends).
"""

from __future__ import annotations

import re
from typing import Callable

import pytest
import torch

from hf_variants.registry import HEAD_AUTO_CLASSES  # noqa: E402  (the registry's head -> Auto class map)

# The output each head is judged by.
MAIN_OUTPUT = {
    "Model": "last_hidden_state",
    "ForPreTraining": "prediction_logits",
    "ForMaskedLM": "logits",
    "ForNextSentencePrediction": "logits",
    "ForSequenceClassification": "logits",
    "ForTokenClassification": "logits",
    "ForQuestionAnswering": "start_logits",
    "ForMultipleChoice": "logits",
}

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
    num_labels=3,
)


class EncoderTester:
    def __init__(
        self,
        config_class: type,
        classes: dict[str, type],
        config_overrides: dict | None = None,
        extra_inputs: dict[str, Callable] | None = None,
        batch_size: int = 3,
        seq_length: int = 10,
        num_choices: int = 2,
        main_outputs: dict[str, str] | None = None,
        params_without_grad: tuple[str, ...] = (),
    ) -> None:
        """``params_without_grad``: regexes of parameter names the tester's inputs legitimately
        leave without gradient (XLNet's ``mask_emb`` only serves a ``target_mapping``)."""
        self.config_class = config_class
        self.classes = classes
        self.config_overrides = config_overrides or {}
        self.extra_inputs = extra_inputs or {}
        self.batch_size, self.seq_length, self.num_choices = batch_size, seq_length, num_choices
        self.main_outputs = {**MAIN_OUTPUT, **(main_outputs or {})}
        self.params_without_grad = params_without_grad

    def main_output(self, head: str) -> str:
        """The output ``head`` is judged by (MAIN_OUTPUT, or the variant's own ``main_outputs``)."""
        return self.main_outputs[head]

    def config(self, **overrides):
        return self.config_class(**{**TINY, **self.config_overrides, **overrides})

    def model(self, head: str, **overrides):
        return self.classes[head](self.config(**overrides))

    def inputs(self, head: str, labels: bool = True, seed: int = 0) -> dict[str, torch.Tensor]:
        """Random ids with padding in two rows, segments, and head-appropriate labels."""
        g = torch.Generator().manual_seed(seed)
        b, t, cfg = self.batch_size, self.seq_length, self.config()
        ids = torch.randint(1, cfg.vocab_size, (b, t), generator=g)
        mask = torch.ones(b, t, dtype=torch.long)
        mask[1, t - 3 :] = 0
        mask[2, t // 2 :] = 0
        ids = ids.masked_fill(mask == 0, cfg.pad_token_id or 0)
        segments = torch.zeros(b, t, dtype=torch.long)
        segments[:, t // 2 :] = 1
        inputs = {"input_ids": ids, "attention_mask": mask}
        if getattr(cfg, "type_vocab_size", 0) > 1:
            inputs["token_type_ids"] = segments * mask
        if head == "ForMultipleChoice":
            inputs = {k: v[:, None].repeat(1, self.num_choices, 1) for k, v in inputs.items()}
        if labels:
            inputs.update(self.labels(head, ids, mask, g))
        if head in self.extra_inputs:
            inputs.update(self.extra_inputs[head](self, ids))
        return inputs

    def labels(self, head: str, ids, mask, g) -> dict[str, torch.Tensor]:
        b, t, cfg = self.batch_size, self.seq_length, self.config()
        mlm = ids.masked_fill(torch.rand(b, t, generator=g) > 0.3, -100).masked_fill(mask == 0, -100)
        mlm[0, 1] = ids[0, 1]  # at least one prediction
        token_labels = torch.randint(0, cfg.num_labels, (b, t), generator=g).masked_fill(mask == 0, -100)
        return {
            "Model": {},
            "ForPreTraining": {"labels": mlm, "next_sentence_label": torch.randint(0, 2, (b,), generator=g)},
            "ForMaskedLM": {"labels": mlm},
            "ForNextSentencePrediction": {"labels": torch.randint(0, 2, (b,), generator=g)},
            "ForSequenceClassification": {"labels": torch.randint(0, cfg.num_labels, (b,), generator=g)},
            "ForTokenClassification": {"labels": token_labels},
            "ForQuestionAnswering": {
                "start_positions": torch.randint(0, t, (b,), generator=g),
                "end_positions": torch.randint(0, t, (b,), generator=g),
            },
            "ForMultipleChoice": {"labels": torch.randint(0, self.num_choices, (b,), generator=g)},
        }[head]


# ----------------------------------------------------------------------------- checks
def check_forward_shapes(tester: EncoderTester, head: str) -> None:
    model = tester.model(head).eval()
    cfg = model.config
    out = model(**tester.inputs(head, labels=False))
    b, t = tester.batch_size, tester.seq_length
    expected = {
        "Model": (b, t, cfg.hidden_size),
        "ForPreTraining": (b, t, cfg.vocab_size),
        "ForMaskedLM": (b, t, cfg.vocab_size),
        "LMHeadModel": (b, t, cfg.vocab_size),
        "ForNextSentencePrediction": (b, 2),
        "ForSequenceClassification": (b, cfg.num_labels),
        "ForTokenClassification": (b, t, cfg.num_labels),
        "ForQuestionAnswering": (b, t),
        "ForMultipleChoice": (b, tester.num_choices),
    }[head]
    assert tuple(out[tester.main_output(head)].shape) == expected
    assert out.get("loss") is None


def check_loss(tester: EncoderTester, head: str) -> None:
    if head == "Model":
        return
    model = tester.model(head).eval()
    out = model(**tester.inputs(head))
    assert out.loss is not None and out.loss.ndim == 0 and torch.isfinite(out.loss)
    # Untrained: close to the loss of a uniform guess, far from zero.
    assert out.loss.item() > 0.1


def check_gradient_flow(tester: EncoderTester, head: str) -> None:
    if head == "Model":
        return
    model = tester.model(head).train()
    model(**tester.inputs(head)).loss.backward()
    without_grad = [
        name
        for name, p in model.named_parameters()
        if p.requires_grad
        and (p.grad is None or not torch.any(p.grad != 0))
        and not _may_lack_grad(name, head)
        and not any(re.search(pattern, name) for pattern in tester.params_without_grad)
    ]
    assert not without_grad, f"parameters with no gradient: {without_grad}"


def _may_lack_grad(name: str, head: str) -> bool:
    # The pooler is unused by heads that read tokens; the padding row of the word table never gets gradient.
    # The per-choice scorer's bias adds the same constant to every choice, which the softmax over
    # choices ignores: its gradient is exactly zero in theory (and may be in floating point).
    if head == "ForMultipleChoice" and name == "classifier.out_proj.bias":
        return True
    return "pooler" in name and head in ("ForMaskedLM", "ForTokenClassification", "ForQuestionAnswering")


def check_save_load(tester: EncoderTester, head: str, tmp_path) -> None:
    model = tester.model(head).eval()
    inputs = tester.inputs(head)
    model.save_pretrained(tmp_path)
    files = {p.name for p in tmp_path.iterdir()}
    assert "model.safetensors" in files and "config.json" in files
    assert not any(f.endswith((".bin", ".pt", ".pkl")) for f in files)
    reloaded = HEAD_AUTO_CLASSES[head].from_pretrained(tmp_path).eval()
    assert type(reloaded) is type(model)
    original, restored = model.state_dict(), reloaded.state_dict()
    assert original.keys() == restored.keys()
    for key in original:
        assert torch.equal(original[key], restored[key]), key
    with torch.no_grad():
        a, b = model(**inputs), reloaded(**inputs)
    # Identical weights; loaded tensors may differ in memory layout, hence ~1e-9 GEMM rounding.
    torch.testing.assert_close(a[tester.main_output(head)], b[tester.main_output(head)], atol=1e-6, rtol=0)
    if hasattr(reloaded, "mlm_head"):
        assert reloaded.mlm_head.decoder.weight is reloaded.get_input_embeddings().weight


def check_backends_agree(tester: EncoderTester, head: str) -> None:
    model = tester.model(head).eval()
    inputs = tester.inputs(head, labels=False)
    with torch.no_grad():
        model.config._attn_implementation = "eager"
        eager = model(**inputs)[tester.main_output(head)]
        model.config._attn_implementation = "sdpa"
        sdpa = model(**inputs)[tester.main_output(head)]
    torch.testing.assert_close(eager, sdpa, atol=1e-5, rtol=0)


# Heads whose main output has one row per token (compared at real positions only).
TOKEN_LEVEL = {
    "Model",
    "ForPreTraining",
    "ForMaskedLM",
    "LMHeadModel",
    "ForTokenClassification",
    "ForQuestionAnswering",
}


def check_batch_vs_single(tester: EncoderTester, head: str) -> None:
    """Each example alone, without padding, gives the outputs it gets inside the padded batch."""
    if head == "ForMultipleChoice":
        return
    model = tester.model(head).eval()
    inputs = tester.inputs(head, labels=False)
    with torch.no_grad():
        batch_out = model(**inputs)[tester.main_output(head)]
        for i in range(tester.batch_size):
            length = int(inputs["attention_mask"][i].sum())
            alone = model(**{k: v[i : i + 1, :length] for k, v in inputs.items()})[tester.main_output(head)][0]
            batched = batch_out[i, :length] if head in TOKEN_LEVEL else batch_out[i]
            torch.testing.assert_close(alone, batched, atol=1e-5, rtol=0)


def check_padding_invariance(tester: EncoderTester, head: str) -> None:
    """Adding more padding changes nothing at real positions; the padding-free path agrees too."""
    model = tester.model(head).eval()
    inputs = tester.inputs(head, labels=False)
    padded = {k: torch.nn.functional.pad(v, (0, 4), value=0) for k, v in inputs.items()}
    with torch.no_grad():
        base = model(**inputs)[tester.main_output(head)]
        more = model(**padded)[tester.main_output(head)]
        model.config.padding_free = True
        packed = model(**padded)[tester.main_output(head)]
    if head in TOKEN_LEVEL:
        keep = inputs["attention_mask"].bool()
        base, more, packed = base[keep], more[:, : tester.seq_length][keep], packed[:, : tester.seq_length][keep]
    torch.testing.assert_close(more, base, atol=1e-5, rtol=0)
    torch.testing.assert_close(packed, base, atol=1e-5, rtol=0)


def check_resize_token_embeddings(tester: EncoderTester, head: str) -> None:
    """After resize_token_embeddings (users add special tokens), ids in the new range run, and a
    tied vocabulary decoder follows: same tensor as the embeddings, bias and logits resized."""
    model = tester.model(head).eval()
    old_size = model.get_input_embeddings().num_embeddings
    model.resize_token_embeddings(old_size + 10)
    assert model.config.vocab_size == old_size + 10
    inputs = tester.inputs(head, labels=False)
    ids = inputs["input_ids"].clone()
    ids[..., 1] = old_size + 5
    out = model(**dict(inputs, input_ids=ids))
    assert torch.isfinite(out[tester.main_output(head)]).all()
    decoder = model.get_output_embeddings()
    if decoder is not None:
        assert decoder.weight is model.get_input_embeddings().weight
        assert decoder.bias is None or decoder.bias.shape == (old_size + 10,)
        if head in ("ForMaskedLM", "ForPreTraining"):
            assert out[tester.main_output(head)].shape[-1] == old_size + 10
    with pytest.raises(ValueError, match=f"id {old_size + 10}"):
        model(**dict(inputs, input_ids=ids.masked_fill(ids == old_size + 5, old_size + 10)))


def check_returned_states_in_graph(tester: EncoderTester, head: str) -> None:
    """Gradients of the output reach every returned hidden state and attention map, on a padded
    batch with the padding-free path allowed (gradient-based attribution relies on it)."""
    model = tester.model(head, padding_free=True).eval()
    model.config._attn_implementation = "eager"
    inputs = tester.inputs(head, labels=False)
    out = model(**inputs, output_hidden_states=True, output_attentions=True)
    returned = [*out.hidden_states, *out.attentions]
    for tensor in returned:
        tensor.retain_grad()
    out[tester.main_output(head)].float().pow(2).sum().backward()
    for index, tensor in enumerate(returned):
        assert tensor.grad is not None and bool(tensor.grad.abs().sum() > 0), f"returned tensor {index} got no gradient"


def check_config_built_step_by_step(tester: EncoderTester, head: str) -> None:
    """An invalid config can be made and edited into a valid one; building a model from it while
    invalid raises a ValueError naming the fields."""
    heads = tester.config().num_attention_heads
    config = tester.config(num_attention_heads=heads + 1)  # no longer divides hidden_size
    with pytest.raises(ValueError, match="num_attention_heads"):
        tester.classes[head](config)
    config.num_attention_heads = heads
    tester.classes[head](config)


def check_inputs_without_batch_dim(tester: EncoderTester, head: str) -> None:
    """One example passed without its batch dimension (1-D ``input_ids``, the usual mistake), alone
    or with its other inputs cut the same way: a ValueError naming the input and the shape it
    must have, raised before anything unpacks the shape (not a TypeError, an IndexError, or
    Python's "not enough values to unpack")."""
    model = tester.model(head).eval()
    main = tester.classes[head].main_input_name
    example = {name: value[0] for name, value in tester.inputs(head, labels=False).items()}
    for call in ({main: example[main]}, example):
        with pytest.raises(ValueError) as raised:
            model(**call)
        message = str(raised.value)
        assert "shape" in message and any(name in message for name in (*call, "inputs")), (
            f"{head}({', '.join(f'{k}: {tuple(v.shape)}' for k, v in call.items())}): unclear ValueError: {message}"
        )


ALL_CHECKS = [
    check_forward_shapes,
    check_loss,
    check_gradient_flow,
    check_backends_agree,
    check_batch_vs_single,
    check_padding_invariance,
    check_resize_token_embeddings,
    check_returned_states_in_graph,
    check_config_built_step_by_step,
    check_inputs_without_batch_dim,
]
