"""The failures the fuzzer (tests/reliability/fuzz/fuzz_variants.py) found, each kept as a plain test."""

import pytest
import torch

import hf_variants
from hf_variants import BertConfig, ViTConfig
from tests.common.encoder_tester import TINY

IDS = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])


def bert(head="Model", **overrides):
    return getattr(hf_variants, f"Bert{head}")(BertConfig(**{**TINY, **overrides})).eval()


@pytest.mark.parametrize("head", ["ForMaskedLM", "ForTokenClassification"])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_batch_without_targets_has_zero_loss_not_nan(head, sparse):
    """Every label -100 (no masked token drawn): the loss was a NaN mean over nothing, and NaN
    gradients ruin every weight at the next step. Now an exact 0 in the graph."""
    model = bert(head, sparse_prediction=sparse).train()
    out = model(IDS, attention_mask=MASK, labels=torch.full_like(IDS, -100))
    assert out.loss.item() == 0.0
    out.loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_float_ids_and_float_class_labels_are_value_errors():
    with pytest.raises(ValueError, match="input_ids must be an integer tensor"):
        bert()(IDS.float())
    with pytest.raises(ValueError, match="token_type_ids must be an integer tensor"):
        bert()(IDS, token_type_ids=torch.zeros(2, 4))
    with pytest.raises(ValueError, match="labels must hold integer class ids"):
        bert("ForTokenClassification")(IDS, labels=torch.zeros(2, 4))


@pytest.mark.parametrize("mask", [MASK * 0.5, MASK * 2])
def test_attention_mask_values_other_than_0_and_1(mask):
    with pytest.raises(ValueError, match="attention_mask must hold only 0"):
        bert("ForQuestionAnswering")(IDS, attention_mask=mask)
    bert()(IDS, attention_mask=MASK.float())  # 0./1. floats and bools stay accepted
    bert()(IDS, attention_mask=MASK.bool())


def test_empty_batches():
    with pytest.raises(ValueError, match=r"empty batch: input_ids has shape \(0, 4\)"):
        bert()(IDS[:0])
    with pytest.raises(ValueError, match="empty batch: input_ids .*no tokens"):
        bert()(IDS[:, :0])
    with pytest.raises(ValueError, match="empty batch: input_ids"):
        bert("ForMultipleChoice")(torch.ones(2, 3, 0, dtype=torch.long))
    vit_config = ViTConfig(
        image_size=8,
        patch_size=4,
        num_channels=1,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=8,
    )
    with pytest.raises(ValueError, match="empty batch: pixel_values"):
        hf_variants.ViTModel(vit_config)(torch.zeros(0, 1, 8, 8))


@pytest.mark.parametrize("head", ["ForMaskedLM", "ForPreTraining"])
@pytest.mark.parametrize("overrides", [dict(is_decoder=True), dict(summary_type="mean")])
def test_sparse_prediction_with_a_causal_stack_or_a_mean_summary(head, overrides):
    """Causal stacks compute every position, and a pooler over the mean reads every position: the
    MLM head asked for masked positions only got (B, T) states (label shape ValueError) or
    scattered a None summary position (TypeError). The sparse loss equals the dense one."""
    labels = torch.full_like(IDS, -100)
    labels[0, 1], labels[1, 0] = 7, 3
    torch.manual_seed(0)
    dense = bert(head, **overrides)
    sparse = bert(head, sparse_prediction=True, **overrides)
    sparse.load_state_dict(dense.state_dict())
    with torch.no_grad():
        expected = dense(IDS, attention_mask=MASK, labels=labels).loss
        got = sparse(IDS, attention_mask=MASK, labels=labels).loss
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_one_real_token_in_a_packed_batch():
    """B = total tokens = 1: the (B, 1, H) summary state was taken for a packed (N, H) tensor and
    re-padded (RuntimeError in gather). Now equals the unpadded row."""
    model = bert("ForSequenceClassification", padding_free=True)
    with torch.no_grad():
        padded = model(torch.tensor([[5, 0]]), attention_mask=torch.tensor([[1, 0]])).logits
        alone = model(torch.tensor([[5]])).logits
    torch.testing.assert_close(padded, alone, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    "overrides,message",
    [
        (dict(num_attention_heads=0), "num_attention_heads must be positive"),  # was a ZeroDivisionError
        (dict(layer_norm_eps=-1e-5), "layer_norm_eps must be positive"),  # was built, NaN on use
        (dict(layer_norm_eps=0.0), "layer_norm_eps must be positive"),
        (dict(hidden_act="no_such_activation"), "hidden_act 'no_such_activation'"),
    ],
)
def test_invalid_configs_found_by_the_fuzzer(overrides, message):
    with pytest.raises(ValueError, match=message):
        hf_variants.BertModel(BertConfig(**{**TINY, **overrides}))


def test_next_sentence_labels_are_named_by_their_argument():
    with pytest.raises(ValueError, match="labels contains class 5"):
        bert("ForNextSentencePrediction")(IDS, labels=torch.tensor([0, 5]))


# ------------------------------------------------------------- found fuzzing the later variants


def tiny_model(variant: str, head: str, **overrides):
    from hf_variants.registry import SPECS
    from tests.common.tiny_variants import tiny_config

    spec = next(s for s in SPECS.values() if s.name == variant)
    torch.manual_seed(0)
    return spec.classes[head](tiny_config(spec, **overrides)).eval()


@pytest.mark.parametrize("positions", ["sinusoidal", "none"])
def test_electra_pretraining_without_a_position_table(positions):
    """The generator shared the discriminator's position table by name: with sinusoidal or no
    positions there is none (AttributeError at build). Now only existing tables are shared."""
    model = tiny_model("electra", "ForPreTraining", position_embedding_type=positions).train()
    labels = torch.full_like(IDS, -100)
    labels[0, 1] = 7
    out = model(IDS, attention_mask=MASK, labels=labels)
    assert torch.isfinite(out.loss)
    assert model.generator.embeddings.word_embeddings is model.electra.embeddings.word_embeddings


@pytest.mark.parametrize(
    "variant,head",
    [
        ("transfo_xl", "Model"),
        ("transfo_xl", "LMHeadModel"),
        ("xlnet", "Model"),
        ("xlnet", "ForSequenceClassification"),
    ],
)
def test_empty_batches_of_the_relative_position_models(variant, head):
    """Transformer-XL and XLNet embed through their own word table: a (0, T) batch ran and returned
    empty outputs, a (B, 0) one failed deep inside. Now the shared empty-batch ValueError."""
    model = tiny_model(variant, head)
    with pytest.raises(ValueError, match=r"empty batch: input_ids has shape \(0, 4\) \(no examples\)"):
        model(IDS[:0])
    with pytest.raises(ValueError, match=r"empty batch: input_ids has shape \(2, 0\) \(no tokens\)"):
        model(IDS[:, :0])


@pytest.mark.parametrize(
    "variant,head,overrides",
    [
        ("transfo_xl", "LMHeadModel", {}),
        ("transfo_xl", "LMHeadModel", {"cutoffs": [40, 70], "div_val": 2}),  # the adaptive softmax's own loss
        ("xlnet", "LMHeadModel", {}),
        ("gpt", "LMHeadModel", {}),  # the shared lm_loss: also T5's and the Transformer's seq2seq loss
        ("t5", "ForConditionalGeneration", {}),
    ],
)
def test_language_model_batches_without_a_target_have_zero_loss(variant, head, overrides):
    """Every label -100 (or one-token rows, whose next-token targets are empty): the loss was a NaN
    (a mean over nothing; 0 / 0 in the adaptive softmax), poisoning the weights at the next step.
    Now heads.cross_entropy_or_zero (branch-free: sum over targets / max(count, 1)) everywhere."""
    model = tiny_model(variant, head, **overrides).train()
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    cases = [(ids, torch.full_like(ids, -100))]
    if variant in ("transfo_xl", "gpt"):  # next-token targets: a one-token row has none (XLNet's are not shifted)
        cases.append((ids[:, :1], ids[:, :1]))
    for inputs, labels in cases:
        out = model(inputs, labels=labels)
        assert out.loss.item() == 0.0
        out.loss.backward()
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_gpt_refuses_a_non_causal_config_in_check_architecture():
    """is_decoder=False passed GPTConfig.check_architecture and failed first at model build; the
    config check (which the fuzzer and from_config rely on) now names it."""
    from hf_variants import GPTConfig

    with pytest.raises(ValueError, match="GPT is a causal decoder: is_decoder must be True"):
        GPTConfig(is_decoder=False).check_architecture()


def test_t5_sequence_classification_of_an_empty_batch():
    """The eos count ran before the empty-batch check: RuntimeError from min() over nothing."""
    model = tiny_model("t5", "ForSequenceClassification")
    with pytest.raises(ValueError, match=r"empty batch: input_ids has shape \(0, 4\)"):
        model(IDS[:0], decoder_input_ids=IDS[:0])


@pytest.mark.parametrize("variant,head", [("gpt", "ForSequenceClassification"), ("t5", "ForQuestionAnswering")])
def test_sequences_without_tokens_found_by_the_nightly_run(variant, head):
    """Nightly fuzz, 2026-11-23: (B, 0) ids reached GPT's last-real-token argmax and T5 QA's
    right shift (IndexError) before the backbone's empty-batch check."""
    model = tiny_model(variant, head)
    with pytest.raises(ValueError, match=r"empty batch: input_ids has shape \(2, 0\) \(no tokens\)"):
        model(IDS[:2, :0])


def test_electra_pretraining_with_a_causal_stack():
    """is_decoder=True: the generator computes every position (BatchLayout.plan) but its labels were
    cut to the masked positions (labels shape ValueError). Now the decoder reads the masked ones."""
    model = tiny_model("electra", "ForPreTraining", is_decoder=True).train()
    labels = torch.full_like(IDS, -100)
    labels[0, 1], labels[1, 0] = 7, 3
    out = model(IDS, attention_mask=MASK, labels=labels)
    assert torch.isfinite(out.loss) and out.prediction_logits.shape == (2, model.config.vocab_size)


@pytest.mark.parametrize("variant,head", [("xlnet", "Model"), ("transfo_xl", "Model")])
@pytest.mark.parametrize("factor", [0.5, 2])
def test_relative_position_models_check_mask_values(variant, head, factor):
    """A mask of 0.5 or 2 ran silently in XLNet (a soft mask) and Transformer-XL (2s are "all ones")."""
    with pytest.raises(ValueError, match="attention_mask must hold only 0"):
        tiny_model(variant, head)(IDS, attention_mask=torch.ones_like(IDS) * factor)


def test_transfo_xl_refuses_what_it_would_ignore():
    """A mask without its batch dim, token_type_ids and a segment table size ran (ignored)."""
    model = tiny_model("transfo_xl", "LMHeadModel")
    with pytest.raises(ValueError, match=r"attention_mask has shape \(4,\), expected \(2, 4\)"):
        model(IDS, attention_mask=torch.ones(4, dtype=torch.long))
    with pytest.raises(ValueError, match="Transformer-XL has no segments: token_type_ids"):
        model(IDS, token_type_ids=(torch.arange(IDS.shape[1]) >= 2).long().expand_as(IDS))
    # All zeros is the one segment it reads (a tokenizer's single-text output): the same logits.
    with torch.no_grad():
        torch.testing.assert_close(
            model(IDS, token_type_ids=torch.zeros_like(IDS)).logits, model(IDS).logits, atol=0, rtol=0
        )
    with pytest.raises(ValueError, match="type_vocab_size must be 0"):
        tiny_model("transfo_xl", "Model", type_vocab_size=2)


def test_xlnet_beam_sizes_are_positive():
    with pytest.raises(ValueError, match="end_n_top must be >= 1"):
        tiny_model("xlnet", "Model", end_n_top=-1)


def test_t5_inputs_found_by_the_fuzzer():
    """T5: token_type_ids vanished into **kwargs (now refused by the encoder, naming them); the
    classifier indexed the decoder with the input's EOS positions (IndexError for decoder inputs of
    another length) and counted EOS in negative ids before checking them; factorized embeddings
    built a model only for the LM head to refuse it at build."""
    ids = torch.tensor([[5, 6, 7, 1], [9, 10, 11, 1]])
    with pytest.raises(ValueError, match="token_type_ids were given but this model has no segment embeddings"):
        tiny_model("t5", "ForConditionalGeneration")(ids, decoder_input_ids=ids, token_type_ids=torch.zeros_like(ids))
    classifier = tiny_model("t5", "ForSequenceClassification")
    with pytest.raises(ValueError, match="decoder_input_ids has length 2 but input_ids 4"):
        classifier(ids, decoder_input_ids=ids[:, :2])
    with pytest.raises(ValueError, match="input_ids contains id -1"):
        classifier(torch.full_like(ids, -1))
    from hf_variants.registry import SPECS
    from tests.common.tiny_variants import tiny_config

    with pytest.raises(ValueError, match="encoder-decoders have no factorized embeddings"):
        tiny_config(next(s for s in SPECS.values() if s.name == "t5"), embedding_size=8).check_architecture()


def test_question_answering_loss_when_every_answer_is_cut_away():
    """Every start/end position past the sequence (ignored): NaN (as in transformers); now 0."""
    model = tiny_model("t5", "ForQuestionAnswering").train()
    ids = torch.tensor([[5, 6, 7, 1]])
    out = model(ids, start_positions=torch.tensor([9]), end_positions=torch.tensor([9]))
    assert out.loss.item() == 0.0


@pytest.mark.parametrize("sharing", ["attention", "ffn"])
def test_gpt_with_partial_layer_sharing(sharing):
    """Later layers hold None where they reuse layer 0's attention or FFN: GPT's scaled-init marking
    of residual projections read them (AttributeError at build)."""
    shared = tiny_model("gpt", "LMHeadModel", layer_sharing=sharing, num_hidden_layers=3)
    out = shared(torch.tensor([[5, 6, 7, 8]]), labels=torch.tensor([[5, 6, 7, 8]]))
    assert torch.isfinite(out.loss)


def test_electra_pretraining_of_empty_sequences_names_input_ids():
    """(B, 0) input_ids with (B, T) labels: the label shape error came first, naming labels."""
    with pytest.raises(ValueError, match=r"empty batch: input_ids has shape \(2, 0\)"):
        tiny_model("electra", "ForPreTraining")(IDS[:, :0], labels=IDS)


def test_gpt_double_heads_mask_without_its_batch_dim():
    """A (C, T) mask beside (B, C, T) ids with B > 1 (25 examples per case): flattening to B*C rows
    was a RuntimeError from reshape; now the backbone names the mask's shape."""
    ids = torch.randint(3, 50, (2, 1, 4))
    with pytest.raises(ValueError, match="attention_mask has shape"):
        tiny_model("gpt", "DoubleHeadsModel")(ids, attention_mask=torch.ones(1, 4, dtype=torch.long))
