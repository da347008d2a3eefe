"""The fast paths change nothing: padding-free = padded = transformers, sparse MLM prediction =
dense at the masked positions, for outputs, losses and gradients, for every BERT head, with eager
and SDPA attention.

Outputs at padding positions are not compared: the padding-free path defines them as zero hidden
states, the padded path computes throw-away values there (both are ignored by every loss; the QA
head, whose softmax reads them, runs padded - see ``test_qa_head_runs_padded``).
"""

from __future__ import annotations

import copy

import pytest
import torch
import transformers

import hf_variants
from hf_variants.models.bert.weights import bert_adapter
from hf_variants.modules.attention import attention_function, packed_self_attention
from hf_variants.modules.masks import make_attention_bias
from hf_variants.modules.padding import UnpaddedBatch

VOCAB, BATCH, LENGTH, CHOICES = 99, 6, 11, 2
# Lengths with every case: a full row, one-token rows, a spread that forces several buckets.
LENGTHS = [11, 3, 7, 1, 10, 2]
HEADS = [
    "Model",
    "ForPreTraining",
    "ForMaskedLM",
    "ForNextSentencePrediction",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForMultipleChoice",
]
ATOL, RTOL = 1e-5, 1e-4


def tiny_config(attn: str, num_labels: int = 3) -> transformers.BertConfig:
    return transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        num_labels=num_labels,
        attn_implementation=attn,
    )


def padding_mask(lengths: list[int], length: int = LENGTH) -> torch.Tensor:
    return (torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]).long()


def labelled_inputs(head: str, generator: torch.Generator) -> tuple[dict, torch.Tensor]:
    """(model inputs with labels, (B, T) or (B, C, T) mask of real tokens)."""
    mask = padding_mask(LENGTHS)
    shape = (BATCH, LENGTH)
    if head == "ForMultipleChoice":
        mask = torch.stack([mask, padding_mask(LENGTHS[::-1])], dim=1)
        shape = (BATCH, CHOICES, LENGTH)
    inputs = {
        "input_ids": torch.randint(1, VOCAB, shape, generator=generator) * mask,
        "attention_mask": mask,
        "token_type_ids": (torch.arange(LENGTH) >= 4).long().expand(shape) * mask,
    }
    token_labels = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=generator)
    real = padding_mask(LENGTHS).bool()
    chosen = (torch.rand(BATCH, LENGTH, generator=generator) < 0.4) & real
    chosen[:, 0] = True  # every row predicts something
    if head in ("ForPreTraining", "ForMaskedLM"):
        inputs["labels"] = torch.where(chosen, token_labels, -100)
    if head == "ForPreTraining":
        inputs["next_sentence_label"] = torch.randint(0, 2, (BATCH,), generator=generator)
    if head in ("ForNextSentencePrediction", "ForMultipleChoice"):
        inputs["labels"] = torch.randint(0, 2, (BATCH,), generator=generator)
    if head == "ForSequenceClassification":
        inputs["labels"] = torch.randint(0, 3, (BATCH,), generator=generator)
    if head == "ForTokenClassification":
        inputs["labels"] = torch.where(real, token_labels % 3, -100)
    if head == "ForQuestionAnswering":
        inputs["start_positions"] = torch.tensor([0, 1, 2, 0, 5, 1])
        inputs["end_positions"] = torch.tensor([3, 2, 6, 0, 9, 1])
    return inputs, mask


def main_outputs(output, head: str) -> list[torch.Tensor]:
    if head == "Model":
        return [output.last_hidden_state, output.pooler_output]
    if head == "ForPreTraining":
        return [output.prediction_logits, output.seq_relationship_logits]
    if head == "ForQuestionAnswering":
        return [output.start_logits, output.end_logits]
    return [output.logits]


def run(model, head: str, inputs: dict) -> tuple[list[torch.Tensor], torch.Tensor]:
    """(outputs, scalar to differentiate: the loss, or a fixed projection of the hidden states)."""
    output = model(**inputs)
    outputs = main_outputs(output, head)
    if head == "Model":
        weights = torch.linspace(-1, 1, outputs[0].shape[-1])
        objective = (outputs[0] * inputs["attention_mask"][..., None] * weights).sum() + outputs[1].sum()
    else:
        objective = output.loss
    return outputs, objective


def real_positions(tensor: torch.Tensor, mask: torch.Tensor, head: str) -> torch.Tensor:
    """Per-token outputs at the real tokens only; sequence-level outputs unchanged."""
    if head == "ForMultipleChoice" or tensor.dim() < 2 or tensor.shape[:2] != mask.shape[:2]:
        return tensor
    return tensor[mask.bool()]


def gradients_in_transformers_names(model, head: str) -> dict[str, torch.Tensor]:
    grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    return bert_adapter(head).to_theirs(grads)


def assert_close(actual, expected, what: str) -> None:
    torch.testing.assert_close(actual, expected, atol=ATOL, rtol=RTOL, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("head", HEADS)
def test_padding_free_equals_padded_equals_transformers(head: str, attn: str) -> None:
    generator = torch.Generator().manual_seed(1)
    # transformers' QA head has num_labels outputs; start/end needs 2.
    config = tiny_config(attn, num_labels=2 if head == "ForQuestionAnswering" else 3)
    theirs = getattr(transformers, f"Bert{head}")(config).eval()
    padded = hf_variants.from_transformers(theirs).eval()
    padded.config.padding_free = False
    free = copy.deepcopy(padded)
    free.config.padding_free = True
    inputs, mask = labelled_inputs(head, generator)

    results = {}
    for name, model in (("transformers", theirs), ("padded", padded), ("padding-free", free)):
        outputs, objective = run(model, head, inputs)
        objective.backward()
        if head == "Model" and name == "padding-free":  # the packed path ran: padding stays zero
            assert torch.all(outputs[0][~mask.bool()] == 0)
        results[name] = ([real_positions(o, mask, head) for o in outputs], objective)
    for name in ("padded", "padding-free"):
        for ours, reference in zip(results[name][0], results["transformers"][0]):
            assert_close(ours, reference, f"{name} output")
        assert_close(results[name][1], results["transformers"][1], f"{name} loss")

    theirs_grads = {name: p.grad for name, p in theirs.named_parameters() if p.grad is not None}
    for name, model in (("padded", padded), ("padding-free", free)):
        ours_grads = gradients_in_transformers_names(model, head)
        shared = sorted(set(ours_grads) & set(theirs_grads))
        assert len(shared) >= len(theirs_grads) - 1  # all but, at most, one tied duplicate
        for key in shared:
            assert_close(ours_grads[key], theirs_grads[key], f"{name} gradient of {key}")


@pytest.mark.parametrize("padding_free", [False, True])
@pytest.mark.parametrize("head", ["ForMaskedLM", "ForPreTraining"])
def test_sparse_prediction_equals_dense_at_masked_positions(head: str, padding_free: bool) -> None:
    generator = torch.Generator().manual_seed(2)
    theirs = getattr(transformers, f"Bert{head}")(tiny_config("sdpa")).eval()
    dense = hf_variants.from_transformers(theirs).eval()
    dense.config.padding_free = padding_free
    sparse = copy.deepcopy(dense)
    sparse.config.sparse_prediction = True
    inputs, _ = labelled_inputs(head, generator)
    selected = inputs["labels"] != -100

    dense_out, sparse_out = dense(**inputs), sparse(**inputs)
    dense_logits = main_outputs(dense_out, head)[0]
    sparse_logits = main_outputs(sparse_out, head)[0]
    assert sparse_logits.shape == (int(selected.sum()), VOCAB)
    assert_close(sparse_logits, dense_logits[selected], "sparse logits")
    assert_close(sparse_out.loss, dense_out.loss, "loss")
    dense_out.loss.backward()
    sparse_out.loss.backward()
    for (name, p_dense), p_sparse in zip(dense.named_parameters(), sparse.parameters()):
        if p_dense.grad is not None:
            assert_close(p_sparse.grad, p_dense.grad, f"gradient of {name}")


def test_padding_free_and_sparse_in_training_mode_without_dropout() -> None:
    """Training mode (what the benchmark runs): both fast paths together, dropout off so the
    outputs are deterministic."""
    config = tiny_config("sdpa")
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
    theirs = transformers.BertForMaskedLM(config).train()
    fast = hf_variants.from_transformers(theirs).train()
    fast.config.padding_free = fast.config.sparse_prediction = True
    inputs, _ = labelled_inputs("ForMaskedLM", torch.Generator().manual_seed(3))
    theirs_loss, fast_loss = theirs(**inputs).loss, fast(**inputs).loss
    assert_close(fast_loss, theirs_loss, "loss")
    theirs_loss.backward()
    fast_loss.backward()
    assert_close(
        fast.bert.embeddings.word_embeddings.weight.grad,
        theirs.bert.embeddings.word_embeddings.weight.grad,
        "tied embedding gradient",
    )


def test_qa_head_runs_padded() -> None:
    """The span softmax covers padding positions, so QA must see the padded path's values there."""
    theirs = transformers.BertForQuestionAnswering(tiny_config("sdpa", num_labels=2)).eval()
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config.padding_free = True
    inputs, _ = labelled_inputs("ForQuestionAnswering", torch.Generator().manual_seed(4))
    assert_close(ours(**inputs).start_logits, theirs(**inputs).start_logits, "start logits, padding included")


def test_padding_free_hidden_states_and_attentions() -> None:
    """Asking for every layer's hidden states or attention maps runs the padded layout even with
    padding_free on: the returned tensors are the ones the computation used (so gradients reach
    them), equal to the padded path everywhere, padding positions included."""
    theirs = transformers.BertModel(tiny_config("eager")).eval()
    padded = hf_variants.from_transformers(theirs).eval()
    padded.config.padding_free = False
    free = copy.deepcopy(padded)
    free.config.padding_free = True
    inputs, mask = labelled_inputs("Model", torch.Generator().manual_seed(5))
    inputs.pop("labels", None)
    assert not bool(mask.all())
    kwargs = dict(output_hidden_states=True, output_attentions=True)
    expected, actual = padded(**inputs, **kwargs), free(**inputs, **kwargs)
    for reference, ours in zip(expected.hidden_states, actual.hidden_states):
        assert_close(ours, reference, "hidden state")
    for reference, ours in zip(expected.attentions, actual.attentions):
        assert_close(ours, reference, "attention")


def test_returned_hidden_states_are_in_the_graph() -> None:
    """Gradients of a loss on the output reach every returned hidden state and attention map, on a
    padded batch with padding_free on (what gradient-based attribution relies on)."""
    model = hf_variants.from_transformers(transformers.BertForSequenceClassification(tiny_config("eager"))).eval()
    model.config.padding_free = True
    inputs, mask = labelled_inputs("ForSequenceClassification", torch.Generator().manual_seed(6))
    assert not bool(mask.all())
    out = model(**inputs, output_hidden_states=True, output_attentions=True)
    for tensor in (*out.hidden_states, *out.attentions):
        tensor.retain_grad()
    out.loss.backward()
    for index, tensor in enumerate((*out.hidden_states, *out.attentions)):
        assert tensor.grad is not None and bool(tensor.grad.abs().sum() > 0), f"returned tensor {index} got no gradient"


def test_no_padding_skips_the_unpadding() -> None:
    """Full-length rows: no mask bias, no unpadding, bit-identical outputs."""
    theirs = transformers.BertForSequenceClassification(tiny_config("sdpa")).eval()
    padded = hf_variants.from_transformers(theirs).eval()
    free = copy.deepcopy(padded)
    free.config.padding_free = True
    ids = torch.randint(1, VOCAB, (3, LENGTH))
    full = torch.ones_like(ids)
    assert make_attention_bias(full, torch.float32) is None
    assert torch.equal(
        free(input_ids=ids, attention_mask=full).logits, padded(input_ids=ids, attention_mask=full).logits
    )


def test_padding_free_inputs_embeds_and_left_padding() -> None:
    """inputs_embeds, left padding and a mask with holes go through the same packed path."""
    theirs = transformers.BertModel(tiny_config("sdpa")).eval()
    padded = hf_variants.from_transformers(theirs).eval()
    free = copy.deepcopy(padded)
    free.config.padding_free = True
    generator = torch.Generator().manual_seed(6)
    embeds = torch.randn(4, LENGTH, 32, generator=generator)
    mask = padding_mask([11, 4, 8, 2]).flip(1)  # left padding
    mask[0, 5] = 0  # a hole
    position_ids = torch.arange(LENGTH).expand(4, LENGTH)
    expected = padded(inputs_embeds=embeds, attention_mask=mask, position_ids=position_ids).last_hidden_state
    actual = free(inputs_embeds=embeds, attention_mask=mask, position_ids=position_ids).last_hidden_state
    assert_close(actual[mask.bool()], expected[mask.bool()], "hidden state")


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_bucketed_causal_attention_equals_padded(attn: str) -> None:
    """The bucketed layout also serves causal self-attention (GPT's packed batches): the packed
    kernel equals padded attention under the padding mask at every real token."""
    heads, head_dim = 4, 8
    mask = padding_mask(LENGTHS)
    qkv = torch.randn(BATCH, LENGTH, 3 * heads * head_dim, generator=torch.Generator().manual_seed(0))
    query, key, value = (x.view(BATCH, LENGTH, heads, head_dim).transpose(1, 2) for x in qkv.chunk(3, dim=-1))
    scale = head_dim**-0.5
    padded, _ = attention_function(query, key, value, make_attention_bias(mask, torch.float32), True, 0.0, scale, attn)
    expected = padded.transpose(1, 2).reshape(BATCH, LENGTH, heads * head_dim)
    unpadded = UnpaddedBatch.from_attention_mask(mask)
    packed = packed_self_attention(unpadded.unpad(qkv), unpadded, heads, scale, 0.0, True, attn)
    assert len(unpadded.attention_buckets) > 1
    assert_close(unpadded.pad(packed)[mask.bool()], expected[mask.bool()], "causal attention")


@pytest.mark.parametrize("head", ["ForMaskedLM", "ForPreTraining", "ForTokenClassification"])
def test_labels_on_padding_run_the_padded_path(head: str) -> None:
    """Targets placed on padding positions read hidden states only the padded path computes: the
    batch then runs padded and the loss still equals transformers'."""
    theirs = getattr(transformers, f"Bert{head}")(tiny_config("sdpa")).eval()
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config.padding_free = True
    inputs, mask = labelled_inputs(head, torch.Generator().manual_seed(7))
    num_classes = 3 if head == "ForTokenClassification" else VOCAB
    inputs["labels"] = torch.where(mask.bool(), inputs["labels"], torch.arange(LENGTH) % num_classes)
    assert_close(ours(**inputs).loss, theirs(**inputs).loss, "loss with targets on padding")
