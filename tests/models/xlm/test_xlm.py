"""XLM through the shared encoder checks (with language ids), plus XLM's own behaviour: language
embeddings, zeros at padding, padding from lengths / pad ids, frozen sinusoids, causal attention,
the TLM collator's batches, Trainer keeping the `langs` column, named configs."""

import inspect

import numpy as np
import pytest
import torch
import transformers

import hf_variants
from hf_variants import XLMConfig
from tests.common.encoder_tester import ALL_CHECKS, EncoderTester, check_save_load

N_LANGS = 3
# ForPreTraining is the same class as ForMaskedLM (XLMWithLMHeadModel).
HEADS = [head for head in hf_variants.registry.SPECS["hfv_xlm"].classes if head != "ForPreTraining"]
CLASSES = {head: hf_variants.registry.SPECS["hfv_xlm"].classes[head] for head in HEADS}


def language_ids(tester: EncoderTester, input_ids: torch.Tensor, head: str) -> dict[str, torch.Tensor]:
    """Two languages per row (a TLM-like pair: first half, second half), shaped like the inputs."""
    langs = (torch.arange(input_ids.shape[1]) >= input_ids.shape[1] // 2).long().expand_as(input_ids) + 1
    if head == "ForMultipleChoice":
        langs = langs[:, None].repeat(1, tester.num_choices, 1)
    return {"langs": langs}


def make_tester(**overrides) -> EncoderTester:
    extra = {head: (lambda tester, ids, head=head: language_ids(tester, ids, head)) for head in HEADS}
    return EncoderTester(XLMConfig, CLASSES, config_overrides={"n_langs": N_LANGS, **overrides}, extra_inputs=extra)


TESTER = make_tester()


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks(check, head):
    check(TESTER, head)


@pytest.mark.parametrize("head", HEADS)
def test_save_load_round_trip(head, tmp_path):
    check_save_load(TESTER, head, tmp_path)


@pytest.mark.parametrize(
    "variant",
    [dict(position_embedding_type="sinusoidal"), dict(hidden_act="relu"), dict(is_decoder=True)],
    ids=["sinusoidal", "relu", "causal"],
)
@pytest.mark.parametrize("head", ["ForMaskedLM", "ForSequenceClassification"])
def test_sinusoidal_relu_and_causal_variants(variant, head, tmp_path):
    tester = make_tester(**variant)
    for check in ALL_CHECKS:
        if (
            variant.get("is_decoder")
            and head == "ForSequenceClassification"
            and check.__name__ == "check_padding_invariance"
        ):
            continue  # a causal model summarising the first token sees nothing else: checked below instead
        check(tester, head)
    check_save_load(tester, head, tmp_path)


def test_registered_heads_and_trainer_keeps_the_language_columns():
    spec = hf_variants.registry.SPECS["hfv_xlm"]
    assert spec.classes["ForPreTraining"] is spec.classes["ForMaskedLM"] is hf_variants.XLMWithLMHeadModel
    assert spec.classes["ForQuestionAnswering"] is hf_variants.XLMForQuestionAnsweringSimple
    for head, cls in CLASSES.items():
        # Trainer drops dataset columns the forward signature does not name.
        names = inspect.signature(cls(TESTER.config()).forward).parameters
        assert "langs" in names and "lengths" in names, head
    # BERT's signatures are untouched.
    assert "langs" not in inspect.signature(hf_variants.BertForMaskedLM.forward).parameters


def test_language_embeddings_are_used_and_checked():
    model = TESTER.model("Model").eval()
    inputs = TESTER.inputs("Model", labels=False)
    base = model(**inputs).last_hidden_state
    other = model(**dict(inputs, langs=torch.zeros_like(inputs["langs"]))).last_hidden_state
    keep = inputs["attention_mask"].bool()
    assert (base - other)[keep].abs().max() > 1e-3
    with pytest.raises(ValueError, match="langs contains id 3"):
        model(**dict(inputs, langs=torch.full_like(inputs["langs"], N_LANGS)))
    with pytest.raises(ValueError, match="langs has shape"):
        model(**dict(inputs, langs=inputs["langs"][:, :4]))
    # Without language embeddings (XLM-100's use_lang_emb=False, or one language) langs are ignored, still checked.
    for overrides in (dict(use_lang_emb=False), dict(n_langs=1)):
        plain = TESTER.model("Model", **overrides).eval()
        assert plain.embeddings.lang_embeddings is None
        langs = inputs["langs"].clamp(max=plain.config.n_langs - 1)
        with_langs = plain(**dict(inputs, langs=langs)).last_hidden_state
        torch.testing.assert_close(
            with_langs, plain(**{k: v for k, v in inputs.items() if k != "langs"}).last_hidden_state
        )


def test_language_embedding_is_added_before_the_layer_norm():
    """embeddings = LayerNorm(word + position + language): the language row enters the sum."""
    model = TESTER.model("Model").eval()
    ids = torch.tensor([[5, 6, 7]])
    langs = torch.tensor([[2, 2, 1]])
    emb = model.embeddings
    expected = emb.layer_norm(
        emb.word_embeddings(ids) + emb.position_embeddings(torch.arange(3)) + emb.lang_embeddings(langs)
    )
    got = emb(ids, None, torch.arange(3)[None], langs=langs)
    torch.testing.assert_close(got, expected)


def test_token_type_ids_index_the_word_table():
    """As transformers' XLM: no segment table; token_type_ids add rows of the word embeddings."""
    model = TESTER.model("Model").eval()
    emb = model.embeddings
    ids, types = torch.tensor([[5, 6, 7]]), torch.tensor([[0, 1, 1]])
    expected = emb.layer_norm(
        emb.word_embeddings(ids) + emb.position_embeddings(torch.arange(3)) + emb.word_embeddings(types)
    )
    torch.testing.assert_close(emb(ids, types, torch.arange(3)[None]), expected)
    with pytest.raises(ValueError, match="token_type_ids contains id 99"):
        model(input_ids=ids, token_type_ids=torch.full_like(ids, 99))


@pytest.mark.parametrize("padding_free", [False, True])
def test_padding_positions_are_exactly_zero(padding_free):
    model = TESTER.model("Model", padding_free=padding_free).eval()
    inputs = TESTER.inputs("Model", labels=False)
    padding = inputs["attention_mask"] == 0
    out = model(**inputs)
    assert (out.last_hidden_state[padding] == 0).all() and (out.last_hidden_state[~padding] != 0).any()
    for states in model(**inputs, output_hidden_states=True).hidden_states:
        assert (states[padding] == 0).all()


def test_the_fast_path_zeroes_padding_when_it_runs_a_batch_padded():
    """Too little padding to pack (< 5%): the padding-free strategy runs the batch padded and still
    zeroes the padding states, as the plain path does; the summary head's last layer computes the
    first token alone."""
    plain = TESTER.model("ForSequenceClassification", padding_free=False).eval()
    fast = TESTER.model("ForSequenceClassification", padding_free=True).eval()
    fast.load_state_dict(plain.state_dict())
    inputs = TESTER.inputs("Model", labels=False)
    mask = torch.ones_like(inputs["attention_mask"])
    mask[0, -1] = 0  # one padding token in the whole batch
    inputs = dict(inputs, attention_mask=mask)
    with torch.no_grad():
        expected = plain.transformer(**inputs).last_hidden_state
        states = fast.transformer(**inputs).last_hidden_state
        assert (states[mask == 0] == 0).all() and (expected[mask == 0] == 0).all()
        torch.testing.assert_close(states, expected, atol=1e-5, rtol=0)
        torch.testing.assert_close(fast(**inputs).logits, plain(**inputs).logits, atol=1e-5, rtol=0)


def test_padding_from_pad_ids_and_from_lengths():
    """Without an attention_mask, the pad tokens (or `lengths`) say where the padding is."""
    model = TESTER.model("Model").eval()
    inputs = TESTER.inputs("Model", labels=False)
    pad = model.config.pad_token_id
    ids = (
        inputs["input_ids"]
        .masked_fill(inputs["input_ids"] == pad, pad + 1)
        .masked_fill(inputs["attention_mask"] == 0, pad)
    )
    reference = model(input_ids=ids, attention_mask=inputs["attention_mask"], langs=inputs["langs"]).last_hidden_state
    from_pad_ids = model(input_ids=ids, langs=inputs["langs"]).last_hidden_state
    from_lengths = model(
        input_ids=ids, langs=inputs["langs"], lengths=inputs["attention_mask"].sum(1)
    ).last_hidden_state
    torch.testing.assert_close(from_pad_ids, reference, atol=1e-6, rtol=0)
    torch.testing.assert_close(from_lengths, reference, atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="lengths must lie in"):
        model(input_ids=ids, lengths=torch.tensor([3, 11, 2]))
    with pytest.raises(ValueError, match="lengths has shape"):
        model(input_ids=ids, lengths=torch.tensor([3, 2]))


def test_sinusoidal_table_is_frozen_and_equals_transformers():
    from transformers.models.xlm.modeling_xlm import create_sinusoidal_embeddings

    model = TESTER.model("ForMaskedLM", position_embedding_type="sinusoidal")
    table = model.transformer.embeddings.position_embeddings.weight
    assert not table.requires_grad
    expected = create_sinusoidal_embeddings(64, 32, torch.empty(64, 32))
    torch.testing.assert_close(table, expected, atol=2e-5, rtol=0)  # ours is computed in fp32, theirs in fp64
    model(**TESTER.inputs("ForMaskedLM")).loss.backward()
    assert table.grad is None


def test_sinusoidal_table_survives_save_and_load(tmp_path):
    model = TESTER.model("ForMaskedLM", position_embedding_type="sinusoidal")
    with torch.no_grad():
        model.transformer.embeddings.position_embeddings.weight.mul_(2.0)  # not what a fresh init would give
    model.save_pretrained(tmp_path)
    reloaded = transformers.AutoModelForMaskedLM.from_pretrained(tmp_path)
    table = reloaded.transformer.embeddings.position_embeddings.weight
    torch.testing.assert_close(table, model.transformer.embeddings.position_embeddings.weight)
    reloaded(**TESTER.inputs("ForMaskedLM")).loss.backward()
    assert table.grad is None  # still frozen


def test_causal_attention_sees_only_the_past():
    model = TESTER.model("Model", is_decoder=True).eval()
    assert model.config.causal is True  # transformers' name reads the same field
    inputs = TESTER.inputs("Model", labels=False)
    base = model(**inputs).last_hidden_state
    changed = inputs["input_ids"].clone()
    changed[0, 6] = (changed[0, 6] + 1) % 99
    out = model(**dict(inputs, input_ids=changed)).last_hidden_state
    torch.testing.assert_close(out[0, :6], base[0, :6])
    assert (out[0, 6:] - base[0, 6:]).abs().max() > 1e-4


def test_sequence_summary_options():
    """transformers' SequenceSummary fields: projection to labels, activation, refusal without projection."""
    model = TESTER.model("ForSequenceClassification", summary_activation="tanh").eval()
    logits = model(**TESTER.inputs("ForSequenceClassification", labels=False)).logits
    assert logits.abs().max() <= 1.0  # tanh after the projection
    with pytest.raises(ValueError, match="summary_proj_to_labels"):
        TESTER.model("ForSequenceClassification", summary_proj_to_labels=False)
    choice = TESTER.model("ForMultipleChoice", summary_proj_to_labels=False)
    assert choice.classifier.logits_proj.in_features == 32  # the summary stays H wide, logits_proj scores it


def test_config_names_and_checks():
    config = XLMConfig(emb_dim=64, n_layers=3, n_heads=4, dropout=0.2, causal=True)
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (64, 3, 4)
    assert config.hidden_dropout_prob == 0.2 and config.is_decoder is True and config.emb_dim == 64
    bad = {
        "asm": dict(asm=True),
        "summary_type": dict(summary_type="cls_index"),
        "n_langs": dict(n_langs=0),
        "type_vocab_size": dict(type_vocab_size=2),
        "lang2id": dict(n_langs=2, lang2id={"en": 0, "fr": 2}),
        "embedding_size": dict(embedding_size=16),
    }
    for field, overrides in bad.items():
        with pytest.raises(ValueError, match=field):
            TESTER.model("Model", **overrides)


def test_tlm_collator_batches_train_our_model(tmp_path):
    """DataCollatorForTranslationLM's batches (restarting positions, per-half langs, masks in
    both halves) run through XLMWithLMHeadModel with a loss, and Trainer keeps the columns."""
    from hf_variants.objectives import DataCollatorForTranslationLM, tlm_dataset
    from tests.common.austen_data import austen_tokenizer
    from tests.objectives.test_objectives_plm import train_two_steps
    from tests.objectives.test_objectives_tlm import LANG2ID, sentence_pairs

    tokenizer = austen_tokenizer()
    rows = tlm_dataset(sentence_pairs(), tokenizer, "en", "en-Cyrl", LANG2ID, max_length=64)
    collator = DataCollatorForTranslationLM(tokenizer, seed=0)
    config = XLMConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=64,
        n_langs=2,
        lang2id=LANG2ID,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = hf_variants.XLMWithLMHeadModel(config).eval()
    batch = collator([rows[k] for k in range(6)])
    assert (batch["position_ids"][:, 0] == 0).all() and (batch["langs"] == 1).any()
    loss = model(**batch).loss
    assert torch.isfinite(loss) and loss.item() > 1.0
    # The language ids and the restarting positions both reach the model.
    assert not torch.allclose(model(**dict(batch, langs=1 - batch["langs"])).loss, loss)
    assert not torch.allclose(model(**{k: v for k, v in batch.items() if k != "position_ids"}).loss, loss)
    # Trainer with remove_unused_columns=True: langs and position_ids must survive to the collator.
    losses = train_two_steps(hf_variants.XLMWithLMHeadModel(config), [rows[k] for k in range(8)], collator, tmp_path)
    assert len(losses) == 2 and all(np.isfinite(losses))


def count_parameters(config) -> int:
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(config)
    return sum(p.numel() for p in model.parameters())


# Conneau et al. 2020 (XLM-R), Table 7: XLM-15 250M, XLM-17 570M, XLM-100 570M parameters.
@pytest.mark.parametrize(
    "name,published",
    [
        ("xlm-mlm-tlm-xnli15-1024", 250e6),
        ("xlm-mlm-17-1280", 570e6),
        ("xlm-mlm-100-1280", 570e6),
    ],
)
def test_paper_sizes_match_the_published_parameter_counts(name, published):
    assert abs(count_parameters(hf_variants.named_config(name)) - published) / published < 0.03


@pytest.mark.parametrize(
    "name", ["xlm-mini", "xlm-mlm-en-2048", "xlm-mlm-tlm-xnli15-1024", "xlm-mlm-17-1280", "xlm-mlm-100-1280"]
)
def test_named_configs_convert_to_transformers_sizes(name):
    """Each named config is expressible as transformers' XLMConfig with the same parameter count
    (built on the meta device)."""
    from hf_variants.models.xlm.weights import config_to_theirs

    config = hf_variants.named_config(name)
    assert config.model_type == "hfv_xlm" and config.intermediate_size == 4 * config.hidden_size
    with torch.device("meta"):
        theirs = transformers.XLMModel(config_to_theirs(config))
    assert sum(p.numel() for p in theirs.parameters()) == count_parameters(config)


@pytest.mark.slow
def test_run_pretraining_trains_xlm_mini_on_the_multilingual_corpus(tmp_path):
    """The spec's defaults (MLM, a byte-level BPE tokenizer trained on the text) through
    examples/run_pretraining.py: a short run lowers the held-out MLM loss; the output loads
    through the Auto classes and classifies."""
    from tests.examples.test_run_pretraining import load_script

    script = load_script()
    results = script.main(
        [
            "--model_name_or_path",
            "xlm-mini",
            "--corpus",
            "multilingual",
            "--max_documents",
            "60",
            "--vocab_size",
            "2000",
            "--max_seq_length",
            "64",
            "--per_device_train_batch_size",
            "8",
            "--per_device_eval_batch_size",
            "32",
            "--learning_rate",
            "2e-3",
            "--max_steps",
            "8",
            "--logging_steps",
            "4",
            "--seed",
            "3",
            "--disable_tqdm",
            "true",
            "--use_cpu",
            "--output_dir",
            str(tmp_path),
        ]
    )
    assert results["objective"] == "mlm"
    assert results["after_training"]["mlm_loss"] < results["before_training"]["mlm_loss"] - 1.0
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path)
    classifier = transformers.AutoModelForSequenceClassification.from_pretrained(tmp_path, num_labels=2)
    assert type(classifier) is hf_variants.XLMForSequenceClassification
    batch = tokenizer(["Un livre magnifique.", "Ein schönes Buch."], padding=True, return_tensors="pt")
    assert classifier(**batch, langs=torch.zeros_like(batch["input_ids"])).logits.shape == (2, 2)
