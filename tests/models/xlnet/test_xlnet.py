"""XLNet through the shared encoder checks (with segment ids), plus XLNet's own behaviour: the
two-stream visibility rule (a prediction never reads its own token or tokens later in the
factorization order), memory (no gradient into it, mem_len kept, causal recurrence equals one
run over the concatenation), a batch of the faithful PLM collator, bad input, named configs."""

import inspect

import pytest
import torch

import hf_variants
from hf_variants import XLNetConfig
from hf_variants.objectives import DataCollatorForPermutationLM
from tests.common.encoder_tester import ALL_CHECKS, EncoderTester, check_save_load

SPEC = hf_variants.registry.SPECS["hfv_xlnet"]
HEADS = [head for head in SPEC.classes if head != "ForPreTraining"]  # ForPreTraining is LMHeadModel


class XLNetTester(EncoderTester):
    def labels(self, head, ids, mask, g):
        if head == "LMHeadModel":  # logits at every position without a target_mapping
            return super().labels("ForMaskedLM", ids, mask, g)
        return super().labels(head, ids, mask, g)


def segment_ids(tester: EncoderTester, input_ids: torch.Tensor, head: str) -> dict[str, torch.Tensor]:
    segments = (torch.arange(input_ids.shape[1]) >= input_ids.shape[1] // 2).long().expand_as(input_ids)
    if head == "ForMultipleChoice":
        segments = segments[:, None].repeat(1, tester.num_choices, 1)
    return {"token_type_ids": segments}


TESTER = XLNetTester(
    XLNetConfig,
    {head: SPEC.classes[head] for head in HEADS},
    # The shared checks pad on the right; XLNet's "last" summary reads position T-1 whatever it
    # holds (as transformers': XLNet's tokenizer pads on the left). The parity tests cover "last".
    config_overrides={"summary_type": "first", "mem_len": 4},
    extra_inputs={head: (lambda tester, ids, head=head: segment_ids(tester, ids, head)) for head in HEADS},
    main_outputs={"LMHeadModel": "logits"},
    params_without_grad=(r"mask_emb$",),  # the query stream starts from it only with a target_mapping
)


def tiny(**overrides) -> XLNetConfig:
    return TESTER.config(hidden_dropout_prob=0.0, **overrides)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_shared_checks(check, head):
    check(TESTER, head)


@pytest.mark.parametrize("head", HEADS)
def test_save_load_round_trip(head, tmp_path):
    check_save_load(TESTER, head, tmp_path)


def test_lm_head_shapes_and_tied_decoder():
    model = SPEC.classes["LMHeadModel"](tiny()).eval()
    assert model.lm_loss.weight is model.transformer.word_embeddings.weight
    ids = torch.randint(6, 99, (2, 7))
    mapping = torch.zeros(2, 3, 7)
    mapping[:, torch.arange(3), torch.tensor([1, 4, 6])] = 1.0
    assert model(ids).logits.shape == (2, 7, 99)
    out = model(ids, target_mapping=mapping, labels=torch.randint(0, 99, (2, 3)))
    assert out.logits.shape == (2, 3, 99) and torch.isfinite(out.loss)


def test_prediction_never_reads_its_token_nor_later_targets():
    """For a random factorization order: changing the token of a target, or of any position later
    in the order, leaves that target's logits unchanged; an earlier position changes them."""
    torch.manual_seed(0)
    model = SPEC.classes["LMHeadModel"](tiny()).eval()
    length = 8
    ids = torch.randint(6, 99, (1, length))
    order = torch.randperm(length)
    rank = torch.empty(length, dtype=torch.long)
    rank[order] = torch.arange(length)
    perm_mask = (rank[None, :] >= rank[:, None]).float()[None]  # i may not see j at or after it
    target = int(order[length // 2])
    mapping = torch.zeros(1, 1, length)
    mapping[0, 0, target] = 1.0
    with torch.no_grad():
        base = model(ids, perm_mask=perm_mask, target_mapping=mapping).logits
        for position in range(length):
            altered = ids.clone()
            altered[0, position] = (int(ids[0, position]) + 1 - 6) % 93 + 6
            moved = not torch.allclose(
                model(altered, perm_mask=perm_mask, target_mapping=mapping).logits, base, atol=1e-6
            )
            assert moved == bool(rank[position] < rank[target]), (position, rank.tolist(), target)


def test_causal_recurrence_equals_one_run_over_the_concatenation():
    """attn_type="uni" (Transformer-XL's setting): segment 2 run with the memory of segment 1
    equals, at segment 2's positions, one causal run over both (mem_len >= segment length)."""
    torch.manual_seed(0)
    for implementation in ("eager", "sdpa"):
        model = SPEC.classes["Model"](tiny(attn_type="uni", mem_len=6)).eval()
        model.config._attn_implementation = implementation
        ids = torch.randint(6, 99, (2, 12))
        with torch.no_grad():
            whole = model(ids).last_hidden_state
            first = model(ids[:, :6], use_mems=True)
            second = model(ids[:, 6:], mems=first.mems, use_mems=True)
        torch.testing.assert_close(second.last_hidden_state, whole[:, 6:], atol=1e-5, rtol=0)
        assert len(second.mems) == 2 and second.mems[0].shape == (6, 2, 32)  # the last mem_len positions kept


def test_memory_holds_no_gradient_and_respects_mem_len():
    model = SPEC.classes["LMHeadModel"](tiny(mem_len=3)).train()
    ids = torch.randint(6, 99, (2, 5))
    first = model(ids, labels=ids, use_mems=True)
    assert all(m.shape == (3, 2, 32) and not m.requires_grad and m.grad_fn is None for m in first.mems)
    second = model(ids, mems=first.mems, labels=ids, use_mems=True)
    second.loss.backward()  # reaches this segment's parameters only: segment 1's graph is untouched
    assert first.loss.grad_fn is not None and model.transformer.word_embeddings.weight.grad is not None
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    model(ids, mems=[m.clone() for m in first.mems], labels=ids, use_mems=True).loss.backward()
    for name, param in model.named_parameters():
        if name in grads:
            torch.testing.assert_close(param.grad, grads[name], atol=0, rtol=0)
    assert model(ids).mems is None  # training mode: use_mems_train=False by default
    assert model.eval()(ids).mems is not None  # eval mode: use_mems_eval=True


def test_plm_collator_batch_trains_the_lm_head():
    from tests.common.austen_data import austen_tokenizer

    tokenizer = austen_tokenizer()
    collator = DataCollatorForPermutationLM(tokenizer, plm_probability=0.3, perm_size=6, seed=0)
    texts = ["It is a truth universally acknowledged, that a single man", "must be in want of a wife."]
    batch = collator([{"input_ids": tokenizer(text)["input_ids"]} for text in texts])
    model = SPEC.classes["LMHeadModel"](tiny(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(5):
        loss = model(**batch).loss
        loss.backward()
        assert bool(model.transformer.mask_emb.grad.abs().sum() > 0)  # the query stream starts from mask_emb
        optimizer.step(), optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert "perm_mask" in inspect.signature(SPEC.classes["ForSequenceClassification"].forward).parameters


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m, ids: m(ids, perm_mask=torch.zeros(2, 5, 4)), "perm_mask"),
        (lambda m, ids: m(ids, target_mapping=torch.zeros(2, 1, 4)), "target_mapping"),
        (lambda m, ids: m(ids, attention_mask=torch.ones(2, 5), input_mask=torch.zeros(2, 5)), "input_mask"),
        (lambda m, ids: m(ids, mems=[torch.zeros(3, 1, 32)] * 2), "memories"),
        (lambda m, ids: m(ids, mems=[torch.zeros(3, 2, 32)]), "one per layer"),
        (lambda m, ids: m(ids, token_type_ids=torch.zeros(2, 4, dtype=torch.long)), "token_type_ids"),
        (lambda m, ids: m(ids[:1]), None),
    ],
)
def test_bad_input_is_a_value_error(call, message):
    model = SPEC.classes["Model"](tiny(bi_data=message is None)).eval()
    ids = torch.randint(6, 99, (2, 5))
    with pytest.raises(ValueError, match=message or "bi_data"):
        call(model, ids)


@pytest.mark.parametrize("field, value", [("attn_type", "both"), ("summary_type", "last_real"), ("mem_len", -1)])
def test_invalid_config_is_a_value_error(field, value):
    with pytest.raises(ValueError, match=field):
        SPEC.classes["Model"](tiny(**{field: value}))


def test_transformers_names_are_aliases():
    config = XLNetConfig(d_model=64, n_layer=3, n_head=4, d_inner=100, dropout=0.2)
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (64, 3, 4)
    assert (config.intermediate_size, config.hidden_dropout_prob, config.d_model) == (100, 0.2, 64)


@pytest.mark.parametrize(
    "name, layers, hidden, heads, params",
    # The paper (Yang et al. 2019, sec. 3.1 and appendix A.3) gives the sizes, "the same architecture
    # hyperparameters as BERT-Base / BERT-Large", but no parameter table; the counts are transformers'
    # XLNetModel's for these sizes (BERT's 110M / 340M plus the relative-position projection W_r,
    # the biases r_w, r_r, r_s, seg_embed and the 32k vocabulary).
    [
        ("xlnet-mini", 4, 256, 4, 11_614_464),
        ("xlnet-base", 12, 768, 12, 116_718_336),
        ("xlnet-large", 24, 1024, 16, 360_268_800),
    ],
)
def test_named_configs_have_the_paper_sizes(name, layers, hidden, heads, params):
    import transformers
    from transformers import AutoModel

    config = hf_variants.named_config(name)
    assert (config.model_type, config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (
        "hfv_xlnet",
        layers,
        hidden,
        heads,
    )
    assert config.intermediate_size == 4 * hidden and config.vocab_size == 32000
    with torch.device("meta"):
        ours = AutoModel.from_config(config)
        theirs = transformers.XLNetModel(hf_variants.models.xlnet.weights.config_to_theirs(config))
    counted = sum(p.numel() for p in ours.parameters())
    assert counted == sum(p.numel() for p in theirs.parameters()) == params
