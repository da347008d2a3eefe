"""RoBERTa (and XLM-RoBERTa, same classes): positions offset by the padding index, one segment
type, the <s> classification head, MLM-only pretraining, named configs, bad input, and every head
through the shared encoder checks + save/load."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModelForPreTraining
from transformers.models.roberta.modeling_roberta import RobertaEmbeddings as TheirEmbeddings

import hf_variants
from hf_variants.models import papers
from hf_variants.models.roberta import RobertaConfig, RobertaForPreTraining, RobertaModel
from hf_variants.tokenization import TOKENIZER_KINDS, train_tokenizer
from tests.common.encoder_tester import ALL_CHECKS, TINY, EncoderTester, check_save_load

PAD = 1


class RobertaTester(EncoderTester):
    """The shared tester with RoBERTa's ids: no real token uses the padding id (RoBERTa reads
    padding from the ids), and MLM-only pretraining labels (no NSP label)."""

    def inputs(self, head, labels=True, seed=0):
        inputs = super().inputs(head, labels, seed)
        real = inputs["attention_mask"].bool()
        inputs["input_ids"] = inputs["input_ids"].masked_fill(real & (inputs["input_ids"] == PAD), 5)
        if head in ("ForMaskedLM", "ForPreTraining") and "labels" in inputs:  # MLM targets are the ids
            inputs["labels"] = inputs["labels"].masked_fill(inputs["labels"] == PAD, 5)
        return inputs

    def labels(self, head, ids, mask, g):
        return super().labels("ForMaskedLM" if head == "ForPreTraining" else head, ids, mask, g)


HEADS = list(hf_variants.registry.SPECS["hfv_roberta"].classes)
CLASSES = {head: getattr(hf_variants, f"Roberta{head}") for head in HEADS}
TESTER = RobertaTester(RobertaConfig, CLASSES)
# The shared checks judge a head by its main output; RoBERTa's pretraining model is an MLM
# (MaskedLMOutput.logits, as transformers' AutoModelForPreTraining gives for RoBERTa), so it runs
# them under the MLM head's name.
PRETRAINING_AS_MLM = RobertaTester(RobertaConfig, {"ForMaskedLM": RobertaForPreTraining})


def tiny(**overrides) -> RobertaConfig:
    return RobertaConfig(**{**TINY, **overrides})


@pytest.mark.parametrize("head", [h for h in HEADS if h != "ForPreTraining"])
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks(check, head):
    check(TESTER, head)


@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks_pretraining(check):
    check(PRETRAINING_AS_MLM, "ForMaskedLM")


@pytest.mark.parametrize("head", [h for h in HEADS if h != "ForPreTraining"])
def test_save_load_round_trip(head, tmp_path):
    check_save_load(TESTER, head, tmp_path)


def test_pretraining_save_load_through_auto_model_for_pretraining(tmp_path):
    model = TESTER.model("ForPreTraining").eval()
    inputs = TESTER.inputs("ForPreTraining")
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForPreTraining.from_pretrained(tmp_path).eval()
    assert type(reloaded) is RobertaForPreTraining
    assert reloaded.mlm_head.decoder.weight is reloaded.get_input_embeddings().weight
    with torch.no_grad():
        a, b = model(**inputs), reloaded(**inputs)
    torch.testing.assert_close(b.logits, a.logits, atol=1e-6, rtol=0)
    torch.testing.assert_close(b.loss, a.loss, atol=1e-6, rtol=0)


# ----------------------------------------------------------------------------- positions
def test_positions_offset_by_the_padding_index_like_transformers():
    ids = torch.tensor(
        [
            [0, 7, 8, 9, 2, PAD, PAD],  # right padding
            [PAD, PAD, 0, 7, 8, 9, 2],  # left padding
            [0, 5, 6, 7, 8, 9, 2],  # none
        ]
    )
    embeddings = RobertaModel(tiny()).embeddings
    ours = embeddings.default_position_ids(ids, 3, 7, ids.device)
    expected = torch.tensor(
        [
            [2, 3, 4, 5, 6, PAD, PAD],
            [PAD, PAD, 2, 3, 4, 5, 6],
            [2, 3, 4, 5, 6, 7, 8],
        ]
    )
    assert torch.equal(ours, expected)
    assert torch.equal(ours, TheirEmbeddings.create_position_ids_from_input_ids(ids, PAD))
    # inputs_embeds carry no padding information: p+1 .. p+T on every row, as transformers.
    from_embeds = embeddings.default_position_ids(None, 3, 7, ids.device)
    assert torch.equal(from_embeds, TheirEmbeddings.create_position_ids_from_inputs_embeds(torch.zeros(3, 7, 4), PAD))
    assert torch.equal(from_embeds[0], torch.arange(2, 9))


def test_other_padding_index_shifts_the_positions():
    config = tiny(pad_token_id=3)
    ids = torch.tensor([[0, 7, 8, 3, 3]])
    positions = RobertaModel(config).embeddings.default_position_ids(ids, 1, 5, ids.device)
    assert positions.tolist() == [[4, 5, 6, 3, 3]]


@pytest.mark.parametrize("head", ["Model", "ForTokenClassification", "ForMaskedLM"])
def test_left_padding_changes_nothing_at_real_tokens(head):
    """Positions count real tokens only, so a left-padded row equals the row alone at its tokens
    (BERT's would not). Sequence-level heads read position 0, which left padding makes a pad, as
    transformers' RobertaClassificationHead does: RoBERTa batches are right-padded."""
    model = TESTER.model(head).eval()
    ids = torch.tensor([[0, 11, 12, 13, 14, 2]])
    padded = torch.cat([torch.full((1, 3), PAD), ids], dim=1)
    mask = (padded != PAD).long()
    key = "last_hidden_state" if head == "Model" else "logits"
    with torch.no_grad():
        alone = model(input_ids=ids)[key]
        left = model(input_ids=padded, attention_mask=mask)[key][:, 3:]
    torch.testing.assert_close(left, alone, atol=1e-5, rtol=0)


def test_inputs_embeds_equal_ids_without_padding():
    model = TESTER.model("Model").eval()
    ids = torch.tensor([[0, 11, 12, 13, 2]])
    with torch.no_grad():
        from_ids = model(input_ids=ids).last_hidden_state
        from_embeds = model(inputs_embeds=model.embeddings.word_embeddings(ids)).last_hidden_state
    torch.testing.assert_close(from_embeds, from_ids, atol=1e-6, rtol=0)


def test_padding_position_row_is_zero_and_gets_no_gradient():
    model = TESTER.model("ForMaskedLM").train()
    table = model.roberta.embeddings.position_embeddings
    assert table.padding_idx == PAD and torch.count_nonzero(table.weight[PAD]) == 0
    inputs = TESTER.inputs("ForMaskedLM")
    model(**inputs).loss.backward()
    assert torch.count_nonzero(table.weight.grad[PAD]) == 0 and torch.count_nonzero(table.weight.grad[PAD + 1]) > 0


def test_full_length_fits_and_one_more_token_is_refused():
    model = TESTER.model("Model", max_position_embeddings=12).eval()  # 12 rows, padding index 1: 10 tokens
    model(input_ids=torch.full((1, 10), 5))
    with pytest.raises(ValueError, match="exceeds the 10 tokens"):
        model(input_ids=torch.full((1, 11), 5))
    with pytest.raises(ValueError, match="exceeds the 10 tokens"):
        model(inputs_embeds=torch.zeros(1, 11, TINY["hidden_size"]))


# ----------------------------------------------------------------------------- architecture
def test_config_defaults_and_validation():
    config = RobertaConfig()
    assert config.model_type == "hfv_roberta" and isinstance(AutoConfig.for_model("hfv_roberta"), RobertaConfig)
    assert (config.vocab_size, config.max_position_embeddings, config.type_vocab_size) == (50265, 514, 1)
    assert (config.pad_token_id, config.bos_token_id, config.eos_token_id, config.layer_norm_eps) == (1, 0, 2, 1e-5)
    for bad, message in [
        (dict(pad_token_id=None), "pad_token_id must be set"),
        (dict(position_embedding_type="sinusoidal"), "offset by the padding index"),
        (dict(max_position_embeddings=2), "leaves no position"),
    ]:
        config = tiny(**bad)  # configs may pass through invalid states; models may not be built from them
        with pytest.raises(ValueError, match=message):
            RobertaModel(config)


def test_one_segment_type():
    model = TESTER.model("Model")
    assert model.embeddings.token_type_embeddings.num_embeddings == 1
    with pytest.raises(ValueError, match="token_type_ids contains id 1"):
        model(input_ids=torch.tensor([[0, 5, 2]]), token_type_ids=torch.tensor([[0, 0, 1]]))


def test_sequence_classifier_reads_s_through_dense_tanh_out_proj_without_pooler():
    model = TESTER.model("ForSequenceClassification").eval()
    assert model.roberta.pooler is None
    inputs = TESTER.inputs("ForSequenceClassification", labels=False)
    with torch.no_grad():
        hidden = model.roberta(**inputs).last_hidden_state
        logits = model(**inputs).logits
    head = model.classifier
    expected = head.out_proj(torch.tanh(head.dense(hidden[:, 0])))
    torch.testing.assert_close(logits, expected, atol=1e-6, rtol=0)


def test_pooler_only_where_transformers_has_one():
    assert TESTER.model("Model").pooler is not None  # RobertaModel(add_pooling_layer=True) default
    assert RobertaModel(tiny(), add_pooling_layer=False).pooler is None
    assert TESTER.model("ForMultipleChoice").roberta.pooler is not None  # scores the pooled <s>
    for head in (
        "ForPreTraining",
        "ForMaskedLM",
        "ForSequenceClassification",
        "ForTokenClassification",
        "ForQuestionAnswering",
    ):
        assert TESTER.model(head).roberta.pooler is None, head


def test_pretraining_is_mlm_without_nsp():
    assert not hasattr(hf_variants, "RobertaForNextSentencePrediction")
    model = AutoModelForPreTraining.from_config(tiny())
    assert type(model) is RobertaForPreTraining
    inputs = TESTER.inputs("ForPreTraining")
    torch.manual_seed(0)
    mlm = hf_variants.RobertaForMaskedLM(tiny()).eval()
    model.load_state_dict(mlm.state_dict())
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs).loss, mlm(**inputs).loss, atol=0, rtol=0)
    with pytest.raises(ValueError, match="without next sentence prediction"):
        model(**inputs, next_sentence_label=torch.zeros(3, dtype=torch.long))


def test_spec_declares_mlm_and_byte_level_bpe():
    spec = hf_variants.registry.SPECS["hfv_roberta"]
    assert (
        spec.pretraining_objective == "mlm" and spec.tokenizer_kind == "bpe" and spec.tokenizer_kind in TOKENIZER_KINDS
    )
    assert spec.paper is papers.ROBERTA


def test_byte_level_bpe_tokenizer_feeds_the_model_with_either_padding_side():
    """The bpe kind's ids (<s>=0 <pad>=1 </s>=2) are the config's; pairs are <s> A </s></s> B </s>;
    right and left padding give the same outputs at real tokens."""
    text = ["The quick brown fox jumps over the lazy dog.", "A lazy dog sleeps under the old brown tree."] * 20
    tokenizer = train_tokenizer("bpe", text, vocab_size=300, min_frequency=1)
    config = RobertaConfig()
    assert (tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id) == (
        config.bos_token_id,
        config.pad_token_id,
        config.eos_token_id,
    )
    pair = tokenizer("the fox", "the dog")["input_ids"]
    assert pair[0] == 0 and pair.count(2) == 3 and pair[-1] == 2 and pair[pair.index(2) + 1] == 2
    model = TESTER.model("Model", vocab_size=len(tokenizer)).eval()
    sentences = ["the fox", "a lazy dog sleeps under the old brown tree"]
    outputs = {}
    for side in ("right", "left"):
        tokenizer.padding_side = side
        batch = tokenizer(sentences, padding=True, return_tensors="pt")
        assert "token_type_ids" not in batch
        with torch.no_grad():
            hidden = model(**batch).last_hidden_state
        outputs[side] = hidden[batch["attention_mask"].bool()]
    torch.testing.assert_close(outputs["left"], outputs["right"], atol=1e-5, rtol=0)


def test_dynamic_masking_collator_feeds_the_pretraining_model():
    """The existing MLM collator with the byte-level BPE tokenizer: padding with <pad>=1 (so the
    model's positions see it), a new mask each time the same examples are batched, and a loss."""
    from hf_variants.objectives import DataCollatorForMaskedLM

    text = ["The quick brown fox jumps over the lazy dog again and again.", "A lazy dog sleeps under an old tree."] * 20
    tokenizer = train_tokenizer("bpe", text, vocab_size=300, min_frequency=1)
    features = [tokenizer(t) for t in ("the quick brown fox jumps over the lazy dog again", "a lazy dog sleeps")] * 4
    collator = DataCollatorForMaskedLM(tokenizer, seed=0)
    first, second = collator(features), collator(features)
    assert bool((first["input_ids"] == PAD).any()) and torch.equal(first["attention_mask"], second["attention_mask"])
    assert not torch.equal(first["labels"], second["labels"])  # dynamic: masks differ between epochs
    model = RobertaForPreTraining(tiny(vocab_size=len(tokenizer)))
    out = model(**first)
    assert out.loss is not None and torch.isfinite(out.loss) and out.logits.shape[:2] == first["input_ids"].shape


# ----------------------------------------------------------------------------- named configs
def count_parameters(config) -> int:
    """The whole network as the papers count it: embeddings + encoder (RoBERTa has no pooler)."""
    with torch.device("meta"):
        model = RobertaModel(config, add_pooling_layer=False)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "name,paper_params",
    [
        ("roberta-base", 125e6),
        ("roberta-large", 355e6),
        ("xlmr-base", 278e6),
        ("xlmr-large", 560e6),
    ],
)
def test_parameter_counts_match_the_papers_within_3_percent(name, paper_params):
    assert abs(count_parameters(hf_variants.named_config(name)) - paper_params) / paper_params < 0.03


@pytest.mark.parametrize(
    "name,layers,hidden,vocab",
    [
        ("roberta-mini", 4, 256, 50265),
        ("roberta-base", 12, 768, 50265),
        ("roberta-large", 24, 1024, 50265),
        ("xlmr-base", 12, 768, 250002),
        ("xlmr-large", 24, 1024, 250002),
    ],
)
def test_named_configs(name, layers, hidden, vocab):
    config = hf_variants.named_config(name)
    assert isinstance(config, RobertaConfig)
    assert (config.num_hidden_layers, config.hidden_size, config.vocab_size) == (layers, hidden, vocab)
    assert (config.max_position_embeddings, config.type_vocab_size, config.pad_token_id) == (514, 1, 1)
    assert config.intermediate_size == 4 * hidden and hidden // config.num_attention_heads == 64


@pytest.mark.parametrize("padding_free", [False, True])
def test_sparse_prediction_on_left_padded_batches_equals_dense(padding_free):
    """The fast paths (packed layout, last layer at the masked tokens only) with RoBERTa's
    id-derived positions on a left-padded batch: identical loss and logits."""
    model = TESTER.model("ForMaskedLM", padding_free=padding_free).eval()
    ids = torch.tensor([[0, 11, 12, 13, 14, 15, 16, 2], [PAD, PAD, PAD, PAD, 0, 21, 22, 2]])
    mask = (ids != PAD).long()
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[0, 5], labels[1, 5] = 12, 15, 21
    with torch.no_grad():
        dense = model(input_ids=ids, attention_mask=mask, labels=labels)
        model.config.sparse_prediction = True
        sparse = model(input_ids=ids, attention_mask=mask, labels=labels)
    torch.testing.assert_close(sparse.logits, dense.logits[labels != -100], atol=1e-5, rtol=0)
    torch.testing.assert_close(sparse.loss, dense.loss, atol=1e-6, rtol=0)
