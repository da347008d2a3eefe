"""SpanBERT: config, the Span Boundary Objective against a direct computation of its formula,
edge spans, bad SBO inputs, and every head through the shared encoder checks + save/load."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F
from transformers import AutoConfig, AutoModelForPreTraining

import hf_variants
from hf_variants.models.spanbert import SpanBertConfig, SpanBertForPreTraining
from tests.common.encoder_tester import ALL_CHECKS, EncoderTester, check_save_load

VOCAB, LENGTH = 99, 12


def tiny_config(**overrides) -> SpanBertConfig:
    fields = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        sbo_position_embedding_size=8,
        max_span_length=6,
        sbo_weight=0.5,
    )
    fields.update(overrides)
    return SpanBertConfig(**fields)


def hand_built_spans(batch: int = 2, length: int = LENGTH):
    """Two interior spans in row 0 (positions 2..4 and 7..8) and one in row 1 (5..5), the MLM and
    SBO columns exactly as the collator's contract describes them."""
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, VOCAB, (batch, length), generator=generator)
    original = input_ids.clone()
    columns = {name: torch.zeros(batch, length, dtype=torch.long) for name in ("sbo_left", "sbo_right", "sbo_relative")}
    labels = torch.full((batch, length), -100)
    spans = [(0, 2, 4), (0, 7, 8), (1, 5, 5)]
    for row, start, end in spans:
        for position in range(start, end + 1):
            labels[row, position] = original[row, position]
            columns["sbo_left"][row, position] = start - 1
            columns["sbo_right"][row, position] = end + 1
            columns["sbo_relative"][row, position] = position - start
            input_ids[row, position] = 4  # [MASK]
    return dict(input_ids=input_ids, labels=labels, sbo_labels=labels.clone(), **columns), spans, original


def test_config_fields_and_validation():
    config = SpanBertConfig()
    assert config.model_type == "hfv_spanbert"
    assert (config.sbo_position_embedding_size, config.max_span_length, config.sbo_weight) == (200, 20, 1.0)
    assert config.vocab_size == 28996
    assert isinstance(AutoConfig.for_model("hfv_spanbert"), SpanBertConfig)
    for bad in (
        dict(max_span_length=0),
        dict(sbo_position_embedding_size=-1),
        dict(sbo_weight=-0.1),
        dict(hidden_size=30),
    ):
        config = SpanBertConfig(**bad)  # a config may hold it; the model build refuses it
        with pytest.raises(ValueError, match=next(iter(bad)) if "hidden" not in next(iter(bad)) else "divisible"):
            hf_variants.SpanBertModel(config)


@pytest.mark.parametrize(
    "name, layers, hidden, vocab",
    [
        ("spanbert-mini", 4, 256, 30522),
        ("spanbert-base", 12, 768, 28996),
        ("spanbert-large", 24, 1024, 28996),
    ],
)
def test_named_configs(name, layers, hidden, vocab):
    config = hf_variants.named_config(name)
    assert isinstance(config, SpanBertConfig)
    assert (config.num_hidden_layers, config.hidden_size, config.vocab_size) == (layers, hidden, vocab)
    assert config.sbo_position_embedding_size == 200


def test_sbo_matches_the_formula_computed_by_hand():
    model = SpanBertForPreTraining(tiny_config()).eval()
    batch, spans, original = hand_built_spans()
    out = model(**batch, output_hidden_states=True)
    hidden = out.hidden_states[-1]
    head = model.sbo_head
    features, targets = [], []
    for row, start, end in spans:
        for position in range(start, end + 1):
            p_i = head.position_embeddings.weight[position - start]
            features.append(torch.cat([hidden[row, start - 1], hidden[row, end + 1], p_i]))
            targets.append(original[row, position])
    x = torch.stack(features)
    x = F.layer_norm(
        F.gelu(x @ head.layer1.dense.weight.T + head.layer1.dense.bias),
        (32,),
        head.layer1.layer_norm.weight,
        head.layer1.layer_norm.bias,
        eps=1e-12,
    )
    x = F.layer_norm(
        F.gelu(x @ head.layer2.dense.weight.T + head.layer2.dense.bias),
        (32,),
        head.layer2.layer_norm.weight,
        head.layer2.layer_norm.bias,
        eps=1e-12,
    )
    word_embeddings = model.bert.embeddings.word_embeddings.weight
    logits = x @ word_embeddings.T + head.decoder.bias
    expected_sbo = F.cross_entropy(logits, torch.stack(targets))

    assert out.sbo_logits.shape == (6, VOCAB)  # 3 + 2 + 1 span tokens, nothing else
    torch.testing.assert_close(out.sbo_logits, logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.sbo_loss, expected_sbo, atol=1e-5, rtol=1e-5)
    expected_mlm = F.cross_entropy(
        out.prediction_logits.reshape(-1, VOCAB), batch["labels"].reshape(-1), ignore_index=-100
    )
    torch.testing.assert_close(out.mlm_loss, expected_mlm)
    torch.testing.assert_close(out.loss, expected_mlm + 0.5 * expected_sbo)


def test_sparse_mlm_and_tuple_output():
    model = SpanBertForPreTraining(tiny_config(sparse_prediction=True)).eval()
    batch, _, _ = hand_built_spans()
    out = model(**batch)
    assert out.prediction_logits.shape == (6, VOCAB)
    as_tuple = model(**batch, return_dict=False)
    torch.testing.assert_close(as_tuple[0], out.loss)


def test_spans_at_sequence_edges_are_skipped():
    """A span starting at 0 or ending at T-1 has no outside boundary: the collator marks its tokens
    -100 in sbo_labels (MLM still predicts them) and the model computes no SBO logits there."""
    model = SpanBertForPreTraining(tiny_config()).eval()
    batch, _, original = hand_built_spans()
    for row, start, end in [(1, 0, 1), (1, LENGTH - 2, LENGTH - 1)]:
        batch["labels"][row, start : end + 1] = original[row, start : end + 1]
        batch["input_ids"][row, start : end + 1] = 4
    out = model(**batch)
    assert out.sbo_logits.shape[0] == 6
    assert int((batch["labels"] != -100).sum()) == 10
    # Only edge spans: nothing to predict, the SBO loss is an exact 0 and gradients still flow.
    only_edges = {**batch, "sbo_labels": torch.full_like(batch["sbo_labels"], -100)}
    out = SpanBertForPreTraining(tiny_config())(**only_edges)
    assert out.sbo_logits.shape == (0, VOCAB) and out.sbo_loss.item() == 0.0
    out.loss.backward()


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("sbo_left", -1, "sbo_left contains id -1"),
        ("sbo_right", LENGTH, f"sbo_right contains id {LENGTH}"),
        ("sbo_relative", 6, "sbo_relative contains id 6.*max_span_length"),
        ("sbo_labels", VOCAB, f"sbo_labels contains class {VOCAB}"),
        ("sbo_left", 9, "sbo_left is 9 .*before the masked token"),
        ("sbo_right", 3, "sbo_right is 3 .*after the masked token"),
    ],
)
def test_bad_sbo_inputs_raise_value_errors(column, value, message):
    model = SpanBertForPreTraining(tiny_config()).eval()
    batch, _, _ = hand_built_spans()
    batch[column][0, 3] = value  # position 3 is inside the span 2..4
    with pytest.raises(ValueError, match=message):
        model(**batch)


def test_missing_or_misshaped_sbo_columns():
    model = SpanBertForPreTraining(tiny_config()).eval()
    batch, _, _ = hand_built_spans()
    with pytest.raises(ValueError, match=r"missing \['sbo_relative'\]"):
        model(**{k: v for k, v in batch.items() if k != "sbo_relative"})
    with pytest.raises(ValueError, match="sbo_right has shape"):
        model(**{**batch, "sbo_right": batch["sbo_right"][:, :-1]})


def test_pretraining_save_load_keeps_ties(tmp_path):
    model = SpanBertForPreTraining(tiny_config()).eval()
    batch, _, _ = hand_built_spans()
    expected = model(**batch)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForPreTraining.from_pretrained(tmp_path).eval()
    assert type(loaded) is SpanBertForPreTraining
    embeddings = loaded.bert.embeddings.word_embeddings.weight
    assert loaded.sbo_head.decoder.weight is embeddings and loaded.mlm_head.decoder.weight is embeddings
    out = loaded(**batch)
    for name in ("loss", "mlm_loss", "sbo_loss", "prediction_logits", "sbo_logits"):
        torch.testing.assert_close(getattr(out, name), getattr(expected, name), atol=0, rtol=0)
    # A tied decoder stays tied under training: one gradient step moves both together.
    out.loss.backward()
    assert embeddings.grad is not None and loaded.sbo_head.decoder.bias.grad.abs().sum() > 0


class SpanBertTester(EncoderTester):
    """The shared encoder tester with SpanBERT's pretraining labels: MLM + SBO columns for one
    interior span (positions 2..3, inside every row's real tokens), no NSP label."""

    def labels(self, head, ids, mask, g):
        if head != "ForPreTraining":
            return super().labels(head, ids, mask, g)
        labels = torch.full_like(ids, -100)
        columns = {name: torch.zeros_like(ids) for name in ("sbo_left", "sbo_right", "sbo_relative")}
        labels[:, 2:4] = ids[:, 2:4]
        columns["sbo_left"][:, 2:4], columns["sbo_right"][:, 2:4] = 1, 4
        columns["sbo_relative"][:, 2:4] = torch.tensor([0, 1])
        return {"labels": labels, "sbo_labels": labels.clone(), **columns}


SHARED_HEADS = list(hf_variants.registry.SPECS["hfv_spanbert"].classes)
TESTER = SpanBertTester(
    SpanBertConfig,
    {head: getattr(hf_variants, f"SpanBert{head}") for head in SHARED_HEADS},
    config_overrides=dict(sbo_position_embedding_size=8, max_span_length=6),
)


@pytest.mark.parametrize("head", SHARED_HEADS)
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks(check, head):
    check(TESTER, head)


@pytest.mark.parametrize("head", SHARED_HEADS)
def test_save_load_round_trip(head, tmp_path):
    check_save_load(TESTER, head, tmp_path)


def test_no_next_sentence_prediction():
    assert not hasattr(hf_variants, "SpanBertForNextSentencePrediction")
    inputs = TESTER.inputs("ForPreTraining")
    with pytest.raises(ValueError, match="without next sentence prediction"):
        TESTER.model("ForPreTraining")(**inputs, next_sentence_label=torch.zeros(3, dtype=torch.long))


def test_pretraining_without_sbo_columns_is_plain_mlm():
    model = SpanBertForPreTraining(tiny_config()).eval()
    batch, _, _ = hand_built_spans()
    out = model(input_ids=batch["input_ids"], labels=batch["labels"])
    assert out.sbo_loss is None and out.sbo_logits is None
    torch.testing.assert_close(out.loss, out.mlm_loss)


def test_resizing_the_vocabulary_keeps_both_decoders_tied():
    model = SpanBertForPreTraining(tiny_config())
    model.resize_token_embeddings(VOCAB + 21, mean_resizing=False)
    embeddings = model.bert.embeddings.word_embeddings.weight
    assert embeddings.shape[0] == VOCAB + 21 and model.config.vocab_size == VOCAB + 21
    for head in (model.mlm_head, model.sbo_head):
        assert head.decoder.weight is embeddings and head.decoder.bias.shape == (VOCAB + 21,)


@pytest.mark.parametrize("padding_free", [False, True])
def test_last_layer_at_masked_tokens_and_span_boundaries_changes_nothing(padding_free):
    """With sparse prediction the last layer computes only the masked tokens and the span
    boundaries; MLM and SBO losses, logits and every gradient equal the full last layer's."""
    torch.manual_seed(0)
    model = SpanBertForPreTraining(
        tiny_config(
            sparse_prediction=True, padding_free=padding_free, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
        )
    ).train()
    batch, _, _ = hand_built_spans(batch=3)
    batch["attention_mask"] = torch.ones_like(batch["input_ids"])
    batch["attention_mask"][2, 9:] = 0  # a padded row with nothing masked
    seen = []
    model.bert.encoder.layers[-1].ffn.register_forward_hook(lambda module, args, out: seen.append(tuple(out.shape)))
    results = []
    for restricted in (False, True):
        model.zero_grad()
        if restricted:
            del model._only_labelled_positions_are_read
        else:
            model._only_labelled_positions_are_read = lambda *args: False  # this instance: full last layer
        out = model(**batch)
        out.loss.backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        results.append((out.mlm_loss, out.sbo_loss, out.prediction_logits, out.sbo_logits, grads))
    # Row 0 reads masked 2..4, 7..8 and boundaries 1, 5, 6, 9: 9 positions of 12. The fast path
    # computes only those in the last layer; the plain path (BERT's) computes all and selects.
    assert seen[0] == ((33, 32) if padding_free else (3, LENGTH, 32))
    assert seen[1] == ((3, 9, 32) if padding_free else (3, LENGTH, 32))
    for full, fast in zip(results[0][:4], results[1][:4]):
        torch.testing.assert_close(fast, full, atol=1e-5, rtol=1e-4)
    assert results[0][4].keys() == results[1][4].keys()
    for name, grad in results[0][4].items():
        torch.testing.assert_close(results[1][4][name], grad, atol=1e-5, rtol=1e-4, msg=name)
