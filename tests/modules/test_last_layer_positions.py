"""The last layer computes only the positions its head reads: [CLS] for sequence classification,
multiple choice and NSP; the masked tokens for the sparse MLM loss. That must change nothing: the
same logits, loss and gradients as the full last layer, for post-LN and pre-LN, layer sharing,
padded and padding-free batches, and left padding."""

from __future__ import annotations

import pytest
import torch

import hf_variants
from hf_variants.modules.fast_path import HeadReads
from tests.modules.test_fast_paths import BATCH, LENGTH, labelled_inputs

CASES = {
    "post-LN": {},
    "pre-LN": {"pre_layer_norm": True},
    "shared layers": {"layer_sharing": "all"},
    "padded path": {"padding_free": False},
}


def tiny(head: str, **overrides) -> torch.nn.Module:
    config = hf_variants.BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        num_labels=3,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        **overrides,
    )
    torch.manual_seed(0)
    return getattr(hf_variants, f"Bert{head}")(config)


def run(model: torch.nn.Module, inputs: dict, summary_only: bool) -> tuple[torch.Tensor, torch.Tensor, dict]:
    model.zero_grad()
    model.reads_summary_only = summary_only  # instance attribute: this model only
    out = model(**inputs)
    out.loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return out.logits.detach(), out.loss.detach(), grads


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("head", ["ForSequenceClassification", "ForMultipleChoice", "ForNextSentencePrediction"])
def test_summary_only_changes_nothing(head: str, case: str):
    model = tiny(head, **CASES[case]).train()
    inputs, _ = labelled_inputs(head, torch.Generator().manual_seed(3))
    full_logits, full_loss, full_grads = run(model, inputs, summary_only=False)
    fast_logits, fast_loss, fast_grads = run(model, inputs, summary_only=True)
    torch.testing.assert_close(fast_logits, full_logits, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(fast_loss, full_loss, atol=1e-5, rtol=1e-4)
    assert fast_grads.keys() == full_grads.keys()
    for name in full_grads:
        torch.testing.assert_close(fast_grads[name], full_grads[name], atol=1e-5, rtol=1e-4, msg=name)


def test_the_last_layer_really_runs_on_one_position_per_row():
    model = tiny("ForSequenceClassification").eval()
    inputs, _ = labelled_inputs("ForSequenceClassification", torch.Generator().manual_seed(0))
    seen = []
    hook = model.bert.encoder.layers[-1].ffn.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    earlier = []
    hook_first = model.bert.encoder.layers[0].ffn.register_forward_hook(
        lambda m, a, out: earlier.append(tuple(out.shape))
    )
    model(**inputs)
    hook.remove()
    hook_first.remove()
    assert seen == [(BATCH, 1, 32)]
    assert earlier[0][0] < BATCH * LENGTH  # earlier layers run padding-free on the real tokens only


def test_asking_for_hidden_states_or_attentions_runs_the_full_last_layer():
    model = tiny("ForSequenceClassification").eval()
    inputs, mask = labelled_inputs("ForSequenceClassification", torch.Generator().manual_seed(0))
    inputs.pop("labels")
    reference = model(**inputs).logits
    out = model(**inputs, output_hidden_states=True, output_attentions=True)
    torch.testing.assert_close(out.logits, reference, atol=1e-5, rtol=1e-4)
    assert out.hidden_states[-1].shape == (BATCH, LENGTH, 32)
    assert out.attentions[-1].shape == (BATCH, 4, LENGTH, LENGTH)
    # The bare backbone gives every position unless asked otherwise.
    assert model.bert(**inputs).last_hidden_state.shape == (BATCH, LENGTH, 32)
    assert model.bert(**inputs, reads=HeadReads(summary_only=True)).last_hidden_state.shape == (BATCH, 1, 32)


@pytest.mark.parametrize("head", ["ForSequenceClassification", "ForNextSentencePrediction"])
def test_left_padded_batches_read_what_the_full_padded_model_reads(head: str):
    """Position 0 is padding in a left-padded batch; the [CLS]-reading heads must still give the
    plain padded computation's logits (which equal transformers', see test_fast_paths)."""
    model = tiny(head).eval()
    inputs, _ = labelled_inputs(head, torch.Generator().manual_seed(4))
    inputs = {k: v.flip(-1) if k in ("input_ids", "attention_mask", "token_type_ids") else v for k, v in inputs.items()}
    assert not bool(inputs["attention_mask"][:, 0].all())
    fast = model(**inputs).logits
    model.reads_summary_only = False
    model.config.padding_free = False
    plain = model(**inputs).logits
    torch.testing.assert_close(fast, plain, atol=1e-5, rtol=1e-4)


def mlm_inputs(seed: int, head: str = "ForMaskedLM") -> dict:
    """labelled_inputs' MLM batch, plus one row with every real token masked and one with none."""
    inputs, mask = labelled_inputs(head, torch.Generator().manual_seed(seed))
    labels = inputs["labels"].clone()
    labels[0] = torch.where(mask[0].bool(), inputs["input_ids"][0], -100)  # LENGTHS[0] = 11: all masked
    labels[3] = -100  # nothing to predict in this row
    inputs["labels"] = labels
    return inputs


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("head", ["ForMaskedLM", "ForPreTraining"])
def test_masked_positions_only_last_layer_changes_nothing(head: str, case: str):
    """With sparse prediction the MLM loss reads the masked positions only (plus [CLS] for NSP),
    so the last layer computes those alone; losses, logits and gradients must equal the full last
    layer's."""
    model = tiny(head, sparse_prediction=True, **CASES[case]).train()
    inputs = mlm_inputs(6, head)
    results = []
    for restricted in (False, True):
        model.zero_grad()
        if not restricted:
            model._only_labelled_positions_are_read = lambda *args: False  # this instance: full last layer
        else:
            del model._only_labelled_positions_are_read
        out = model(**inputs)
        out.loss.backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        logits = (
            out.logits
            if head == "ForMaskedLM"
            else torch.cat([out.prediction_logits.flatten(), out.seq_relationship_logits.flatten()])
        )
        results.append((logits.detach(), out.loss.detach(), grads))
    (full_logits, full_loss, full_grads), (fast_logits, fast_loss, fast_grads) = results
    torch.testing.assert_close(fast_logits, full_logits, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(fast_loss, full_loss, atol=1e-5, rtol=1e-4)
    assert fast_grads.keys() == full_grads.keys()
    for name in full_grads:
        torch.testing.assert_close(fast_grads[name], full_grads[name], atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("head", ["ForMaskedLM", "ForPreTraining"])
def test_the_mlm_last_layer_runs_on_the_masked_positions_only(head: str):
    model = tiny(head, sparse_prediction=True).eval()
    inputs = mlm_inputs(7, head)
    inputs["labels"][0] = -100
    inputs["labels"][0, 2] = inputs["input_ids"][0, 2]
    read = inputs["labels"] != -100
    if head == "ForPreTraining":
        read[:, 0] = True  # NSP's pooler reads [CLS]
    most_masked = int(read.sum(dim=1).max())
    assert most_masked < LENGTH
    seen = []
    hook = model.bert.encoder.layers[-1].ffn.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    out = model(**inputs)
    hook.remove()
    assert seen == [(BATCH, most_masked, 32)]
    logits = out.logits if head == "ForMaskedLM" else out.prediction_logits
    assert logits.shape == (int((inputs["labels"] != -100).sum()), 99)
    # Asking for hidden states computes every position (and the same loss).
    full = model(**inputs, output_hidden_states=True)
    assert full.hidden_states[-1].shape == (BATCH, LENGTH, 32)
    torch.testing.assert_close(full.loss, out.loss, atol=1e-5, rtol=1e-4)
