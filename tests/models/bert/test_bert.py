"""BERT through the shared encoder checks, plus BERT-specific behaviour."""

import pytest
import torch
import transformers

import hf_variants
from hf_variants import BertConfig
from tests.common.encoder_tester import ALL_CHECKS, EncoderTester, check_save_load

HEADS = list(hf_variants.registry.SPECS["hfv_bert"].classes)
TESTER = EncoderTester(BertConfig, {head: getattr(hf_variants, f"Bert{head}") for head in HEADS})


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks(check, head):
    check(TESTER, head)


@pytest.mark.parametrize("head", HEADS)
def test_save_load_round_trip(head, tmp_path):
    check_save_load(TESTER, head, tmp_path)


@pytest.mark.parametrize("variant", [dict(pre_layer_norm=True), dict(position_embedding_type="sinusoidal")])
@pytest.mark.parametrize("head", ["ForMaskedLM", "ForSequenceClassification"])
def test_pre_ln_and_sinusoidal_variants(variant, head, tmp_path):
    tester = EncoderTester(BertConfig, TESTER.classes, config_overrides=variant)
    for check in ALL_CHECKS:
        check(tester, head)
    check_save_load(tester, head, tmp_path)


def test_pre_ln_has_final_norm_and_differs_from_post_ln():
    post, pre = TESTER.model("Model").eval(), TESTER.model("Model", pre_layer_norm=True).eval()
    assert post.encoder.final_layer_norm is None and pre.encoder.final_layer_norm is not None
    pre.load_state_dict(post.state_dict(), strict=False)
    inputs = TESTER.inputs("Model", labels=False)
    with torch.no_grad():
        assert not torch.allclose(post(**inputs).last_hidden_state, pre(**inputs).last_hidden_state)


def test_sinusoidal_table_matches_the_paper_formula():
    model = TESTER.model("Model", position_embedding_type="sinusoidal")
    table = model.embeddings.sinusoidal_positions
    d = table.shape[1]
    pos, i = 5, 3
    assert table[pos, 2 * i].item() == pytest.approx(
        torch.sin(torch.tensor(pos / 10000 ** (2 * i / d))).item(), abs=1e-6
    )
    assert table[pos, 2 * i + 1].item() == pytest.approx(
        torch.cos(torch.tensor(pos / 10000 ** (2 * i / d))).item(), abs=1e-6
    )
    assert not any("sinusoidal" in k for k in model.state_dict())


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn"])
def test_cross_layer_sharing_stores_shared_weights_once(sharing, tmp_path):
    model = TESTER.model("ForMaskedLM", num_hidden_layers=3, layer_sharing=sharing)
    keys = model.state_dict().keys()
    per_layer = {
        "all": ("encoder.layers.1.",),
        "attention": ("encoder.layers.1.attention.", "encoder.layers.2.attention."),
        "ffn": ("encoder.layers.1.ffn.", "encoder.layers.2.ffn."),
    }[sharing]
    assert not any(p in k for k in keys for p in per_layer)
    check_save_load(
        EncoderTester(BertConfig, TESTER.classes, {"num_hidden_layers": 3, "layer_sharing": sharing}),
        "ForMaskedLM",
        tmp_path,
    )
    unshared = TESTER.model("ForMaskedLM", num_hidden_layers=3)
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in unshared.parameters())


def test_shared_all_applies_one_layer_repeatedly():
    model = TESTER.model("Model", num_hidden_layers=3, layer_sharing="all").eval()
    inputs = TESTER.inputs("Model", labels=False)
    out = model(**inputs, output_hidden_states=True)
    assert len(out.hidden_states) == 4
    layer = model.encoder.layers[0]
    with torch.no_grad():
        h = out.hidden_states[0]
        keep = inputs["attention_mask"].bool()
        bias = hf_variants.modules.masks.make_attention_bias(inputs["attention_mask"], h.dtype)
        for depth in range(3):
            h, *_ = layer(h, bias)
            torch.testing.assert_close(h[keep], out.hidden_states[depth + 1][keep], atol=1e-6, rtol=0)


def test_base_checkpoint_into_head_reports_initialised_weights(tmp_path):
    base = TESTER.model("Model")
    base.save_pretrained(tmp_path)
    model, info = transformers.AutoModelForSequenceClassification.from_pretrained(tmp_path, output_loading_info=True)
    assert set(info["missing_keys"]) == {"classifier.out_proj.weight", "classifier.out_proj.bias"}
    torch.testing.assert_close(model.bert.embeddings.word_embeddings.weight, base.embeddings.word_embeddings.weight)


def test_regression_and_multilabel_losses():
    reg = TESTER.model("ForSequenceClassification", num_labels=1).eval()
    inputs = TESTER.inputs("ForSequenceClassification", labels=False)
    target = torch.tensor([0.5, -1.0, 2.0])
    out = reg(**inputs, labels=target)
    torch.testing.assert_close(out.loss, torch.nn.functional.mse_loss(out.logits.squeeze(-1), target))
    multi = TESTER.model("ForSequenceClassification", problem_type="multi_label_classification").eval()
    hot = torch.tensor([[1.0, 0, 1], [0, 0, 0], [0, 1, 0]])
    out = multi(**inputs, labels=hot)
    torch.testing.assert_close(out.loss, torch.nn.functional.binary_cross_entropy_with_logits(out.logits, hot))


def test_pretraining_loss_is_sum_of_mlm_and_nsp():
    model = TESTER.model("ForPreTraining").eval()
    inputs = TESTER.inputs("ForPreTraining")
    out = model(**inputs)
    torch.testing.assert_close(out.loss, out.mlm_loss + out.nsp_loss)
    mlm = torch.nn.functional.cross_entropy(
        out.prediction_logits.view(-1, 99), inputs["labels"].view(-1), ignore_index=-100
    )
    torch.testing.assert_close(out.mlm_loss, mlm)


def test_sparse_prediction_equals_dense_at_masked_positions():
    model = TESTER.model("ForMaskedLM").eval()
    inputs = TESTER.inputs("ForMaskedLM")
    dense = model(**inputs)
    model.config.sparse_prediction = True
    sparse = model(**inputs)
    selected = inputs["labels"] != -100
    assert sparse.logits.shape == (int(selected.sum()), 99)
    torch.testing.assert_close(sparse.logits, dense.logits[selected], atol=1e-6, rtol=0)
    torch.testing.assert_close(sparse.loss, dense.loss, atol=1e-6, rtol=0)


def test_qa_out_of_range_positions_are_ignored_like_transformers():
    model = TESTER.model("ForQuestionAnswering").eval()
    inputs = TESTER.inputs("ForQuestionAnswering", labels=False)
    start, end = torch.tensor([1, 50, 2]), torch.tensor([3, 60, 4])
    out = model(**inputs, start_positions=start, end_positions=end)
    keep = torch.tensor([True, False, True])
    expected = (
        torch.nn.functional.cross_entropy(out.start_logits[keep], start[keep])
        + torch.nn.functional.cross_entropy(out.end_logits[keep], end[keep])
    ) / 2
    torch.testing.assert_close(out.loss, expected)


def test_gradient_checkpointing_gives_the_same_gradients():
    model = TESTER.model("ForMaskedLM", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0).train()
    inputs = TESTER.inputs("ForMaskedLM")
    model(**inputs).loss.backward()
    plain = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    model.activation_checkpointing_enable()
    assert all(layer.gradient_checkpointing for layer in model.bert.encoder.layers)
    model(**inputs).loss.backward()
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad, plain[name], atol=1e-6, rtol=0, msg=name)


def test_padding_free_switch_selects_the_path(tmp_path):
    """``config.padding_free`` is the one switch of the speed plug-in (modules/fast_path.py): on
    (the default) a CPU batch with padding runs packed, (N, H) per-token tensors; set to False
    after AutoConfig.from_pretrained, every layer sees the padded (B, T, H) batch. CUDA runs plain."""
    from hf_variants.modules.fast_path import fast_path_for

    TESTER.model("Model").save_pretrained(tmp_path)
    inputs = TESTER.inputs("Model", labels=False)
    inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
    inputs["attention_mask"][:, inputs["input_ids"].shape[1] // 2 :] = 0  # half padding: worth packing
    shapes = {}
    for padding_free in (True, False):
        config = transformers.AutoConfig.from_pretrained(tmp_path)
        config.padding_free = padding_free
        model = transformers.AutoModel.from_pretrained(tmp_path, config=config).eval()
        seen = []
        model.encoder.layers[0].ffn.register_forward_hook(lambda m, args, out, seen=seen: seen.append(tuple(out.shape)))
        with torch.no_grad():
            model(**inputs)
        shapes[padding_free] = seen[0]
    batch, length = inputs["input_ids"].shape
    assert shapes[False] == (batch, length, TESTER.config().hidden_size)
    assert shapes[True] == (int(inputs["attention_mask"].sum()), TESTER.config().hidden_size)
    config = TESTER.config()
    assert fast_path_for(config, torch.device("cpu"), False, False) is not None
    assert fast_path_for(config, torch.device("cuda"), False, False) is None
    assert fast_path_for(config, torch.device("cpu"), True, False) is None  # every layer's states asked for
    config.padding_free = False
    assert fast_path_for(config, torch.device("cpu"), False, False) is None
