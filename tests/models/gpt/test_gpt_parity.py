"""GPT against transformers' GPT-2 and OpenAI GPT classes: identical outputs for identical weights
(tiny configs, random weights, both conversion directions, eager and sdpa, right and left padding),
from_pretrained of folders saved by transformers, and generate() giving transformers' exact tokens
(greedy and 3 beams, left-padded batches)."""

from __future__ import annotations

import pytest
import torch
import transformers

import hf_variants
from hf_variants import from_transformers, to_transformers

PAD = 0
FAMILIES = ("GPT2", "OpenAIGPT")
HEADS = {  # head -> (the output compared, compared at real tokens only)
    "Model": ("last_hidden_state", True),
    "LMHeadModel": ("logits", True),
    "ForSequenceClassification": ("logits", False),
    "ForTokenClassification": ("logits", True),
    "ForQuestionAnswering": ("start_logits", True),
}
PAIRS = [(family, head) for family in FAMILIES for head in HEADS if hasattr(transformers, family + head)]


def their_config(family: str, backend: str = "sdpa") -> transformers.PreTrainedConfig:
    # The wide init gives peaked next-token distributions: greedy/beam choices are no near-ties.
    common = dict(
        vocab_size=99,
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        initializer_range=0.3,
        pad_token_id=PAD,
        bos_token_id=1,
        num_labels=3,
    )
    if family == "GPT2":
        config = transformers.GPT2Config(n_inner=37, eos_token_id=None, **common)
    else:
        config = transformers.OpenAIGPTConfig(**common)
    config._attn_implementation = backend
    return config


def their_model(family: str, head: str, backend: str = "sdpa", seed: int = 0):
    """transformers' model; OpenAI GPT has eager attention only (ours then runs ``backend`` alone)."""
    torch.manual_seed(seed)
    backend = "eager" if family == "OpenAIGPT" else backend
    return getattr(transformers, family + head)(their_config(family, backend)).eval()


def ours_from(theirs, backend: str):
    ours = from_transformers(theirs).eval()
    ours.config._attn_implementation = backend
    return ours


def padded_batch(side: str, lengths=(7, 3, 5), seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.full((len(lengths), width), PAD, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, length in enumerate(lengths):
        where = slice(width - length, width) if side == "left" else slice(0, length)
        ids[row, where] = torch.randint(3, 99, (length,), generator=generator)
        mask[row, where] = 1
    return ids, mask


def assert_same_outputs(ours, theirs, head: str, side: str) -> None:
    name, token_level = HEADS[head]
    ids, mask = padded_batch(side)
    with torch.no_grad():
        a, b = ours(ids, attention_mask=mask)[name], theirs(ids, attention_mask=mask)[name]
    if token_level:
        a, b = a[mask.bool()], b[mask.bool()]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("backend", ["eager", "sdpa"])
@pytest.mark.parametrize("family,head", PAIRS)
def test_from_transformers_gives_their_outputs(family, head, backend, side):
    theirs = their_model(family, head, backend)
    ours = ours_from(theirs, backend)
    assert type(ours) is getattr(hf_variants, "GPT" + head)
    assert ours.config.pre_layer_norm == (family == "GPT2")
    assert_same_outputs(ours, theirs, head, side)


@pytest.mark.parametrize("backend", ["eager", "sdpa"])
@pytest.mark.parametrize("family,head", PAIRS)
def test_to_transformers_gives_our_outputs(family, head, backend):
    # Our model first (our init, GPT-1 or GPT-2 from the config): the family follows the config.
    ours = ours_from(their_model(family, head, backend), backend)
    torch.manual_seed(1)
    ours = type(ours)(ours.config).eval()
    theirs = to_transformers(ours).eval()
    assert type(theirs) is getattr(transformers, family + head)
    for side in ("right", "left"):
        assert_same_outputs(ours, theirs, head, side)
    assert all(
        torch.equal(value, from_transformers(theirs).state_dict()[key]) for key, value in ours.state_dict().items()
    )


@pytest.mark.parametrize("family,head", PAIRS)
def test_from_pretrained_of_a_transformers_folder(family, head, tmp_path):
    theirs = their_model(family, head)
    theirs.save_pretrained(tmp_path)
    ours = getattr(hf_variants, "GPT" + head).from_pretrained(tmp_path).eval()
    assert ours.config.model_type == "hfv_gpt" and ours.config.pre_layer_norm == (family == "GPT2")
    assert_same_outputs(ours, theirs, head, "right")
    assert_same_outputs(ours, theirs, head, "left")
    if head == "LMHeadModel":
        assert ours.lm_head.weight is ours.get_input_embeddings().weight


# Both paths of the speed plug-in (config.padding_free, hf_variants/modules/fast_path.py): a forward
# without a cache (training; every head but a generating LM) runs packed on the fast path.
PATHS = {"plain": False, "fast": True}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("family,head", PAIRS)
def test_both_paths_give_their_outputs_and_loss_without_a_cache(family, head, side, path):
    theirs = their_model(family, head)
    ours = ours_from(theirs, "sdpa")
    ours.config.padding_free = PATHS[path]
    name, token_level = HEADS[head]
    ids, mask = padded_batch(side)
    labels = {"labels": ids.masked_fill(mask == 0, -100)} if head == "LMHeadModel" else {}
    with torch.no_grad():
        a = ours(ids, attention_mask=mask, use_cache=False, **labels)
        b = theirs(ids, attention_mask=mask, **labels)
    real = mask.bool()
    torch.testing.assert_close(a[name][real] if token_level else a[name], b[name][real] if token_level else b[name])
    if labels and side == "right":  # left: the last padding slot predicts the first token, from a fully masked row
        torch.testing.assert_close(a.loss, b.loss, atol=1e-5, rtol=0)
    if head == "Model" and path == "fast":  # it ran packed: the re-padded output is zero at padding
        assert bool((a.last_hidden_state[~real] == 0).all())
    if head == "Model" and path == "plain":
        assert not bool((a.last_hidden_state[~real] == 0).all())


@pytest.mark.parametrize("family", FAMILIES)
def test_lm_loss_and_token_types_match(family):
    theirs = their_model(family, "LMHeadModel")
    ours = from_transformers(theirs).eval()
    ids, mask = padded_batch("right")
    labels = ids.masked_fill(mask == 0, -100)
    types = torch.randint(3, 99, ids.shape)
    with torch.no_grad():
        a = ours(ids, attention_mask=mask, labels=labels, token_type_ids=types)
        b = theirs(ids, attention_mask=mask, labels=labels, token_type_ids=types)
    torch.testing.assert_close(a.loss, b.loss, atol=1e-5, rtol=0)
    torch.testing.assert_close(a.logits[mask.bool()], b.logits[mask.bool()], atol=1e-5, rtol=0)


@pytest.mark.parametrize("backend", ["eager", "sdpa"])
@pytest.mark.parametrize("family", FAMILIES)
def test_generation_gives_their_tokens_on_left_padded_batches(family, backend):
    theirs = their_model(family, "LMHeadModel", backend)
    ours = ours_from(theirs, backend)
    ids, mask = padded_batch("left")
    for options in (dict(do_sample=False), dict(num_beams=3, do_sample=False)):
        expected = theirs.generate(ids, attention_mask=mask, max_new_tokens=10, **options)
        assert torch.equal(ours.generate(ids, attention_mask=mask, max_new_tokens=10, **options), expected)
        assert len(set(expected[:, ids.shape[1] :].flatten().tolist())) >= 3  # rows continue differently


def test_gpt1_config_refuses_the_gpt2_class():
    ours = from_transformers(their_model("OpenAIGPT", "Model"))
    with pytest.raises(ValueError, match="GPT-2"):
        to_transformers(ours, transformers.GPT2Model)


def test_config_translation_round_trips():
    for family in FAMILIES:
        theirs = their_config(family)
        ours = hf_variants.models.gpt.weights.config_to_ours(theirs)
        back = hf_variants.models.gpt.weights.config_to_theirs(ours)
        assert type(back) is type(theirs)
        for name in (
            "vocab_size",
            "n_positions",
            "n_embd",
            "n_layer",
            "n_head",
            "layer_norm_epsilon",
            "pad_token_id",
            "num_labels",
        ):
            assert getattr(back, name) == getattr(theirs, name), name
    assert (
        hf_variants.models.gpt.weights.config_to_ours(their_config("OpenAIGPT")).hidden_act == "gelu_new"
    )  # its "gelu" is tanh
    with pytest.raises(ValueError, match="activation 'gelu'"):
        hf_variants.models.gpt.weights.config_to_theirs(hf_variants.GPTConfig(pre_layer_norm=False, hidden_act="gelu"))
    with pytest.raises(ValueError, match="4 x hidden_size"):
        hf_variants.models.gpt.weights.config_to_theirs(
            hf_variants.GPTConfig(pre_layer_norm=False, intermediate_size=100)
        )


@pytest.mark.parametrize("family", FAMILIES)
def test_double_heads_match_and_combine_the_losses_as_gpt1(family, tmp_path):
    torch.manual_seed(0)
    theirs = getattr(transformers, family + "DoubleHeadsModel")(their_config(family, "eager")).eval()
    ours = from_transformers(theirs).eval()
    assert type(ours) is hf_variants.GPTDoubleHeadsModel
    ids = torch.randint(3, 99, (2, 3, 6))
    mc_token_ids, mc_labels = torch.randint(0, 6, (2, 3)), torch.tensor([0, 2])
    with torch.no_grad():
        a = theirs(ids, mc_token_ids=mc_token_ids, labels=ids, mc_labels=mc_labels)
        b = ours(ids, mc_token_ids=mc_token_ids, labels=ids, mc_labels=mc_labels)
    for name in ("logits", "mc_logits", "mc_loss"):
        torch.testing.assert_close(b[name], a[name], atol=1e-5, rtol=0)
    torch.testing.assert_close(b.lm_loss, a.loss, atol=1e-5, rtol=0)  # transformers' `loss` is the LM part
    torch.testing.assert_close(b.loss, b.mc_loss + 0.5 * b.lm_loss)  # L3 = L2 + lambda L1, lambda 0.5
    back = to_transformers(ours).eval()
    assert type(back) is type(theirs)
    with torch.no_grad():
        torch.testing.assert_close(back(ids, mc_token_ids=mc_token_ids).mc_logits, a.mc_logits, atol=1e-5, rtol=0)
    theirs.save_pretrained(tmp_path)
    loaded = hf_variants.GPTDoubleHeadsModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids, mc_token_ids=mc_token_ids).mc_logits, a.mc_logits, atol=1e-5, rtol=0)


def test_gpt1_formatting_feeds_the_double_heads_model():
    start, delim, extract = 90, 91, 92
    batch = hf_variants.format_gpt1_inputs([[[5, 6], [7]], [[5, 6], [8, 9]]], start, delim, extract, PAD)
    assert batch["input_ids"][0].tolist() == [
        [start, 5, 6, delim, 7, extract, PAD],
        [start, 5, 6, delim, 8, 9, extract],
    ]
    assert batch["mc_token_ids"].tolist() == [[5, 6]] and batch["labels"][0, 0, -1].item() == -100
    single = hf_variants.format_gpt1_inputs([[[5, 6, 7]]], start, delim, extract, PAD)
    assert single["input_ids"][0, 0].tolist() == [start, 5, 6, 7, extract]
    torch.manual_seed(0)
    model = hf_variants.GPTDoubleHeadsModel(
        hf_variants.GPTConfig(**hf_variants.models.gpt.weights.config_dict_to_ours(their_config("OpenAIGPT").to_dict()))
    ).eval()
    out = model(**batch, mc_labels=torch.tensor([1]))
    assert out.mc_logits.shape == (1, 2) and torch.isfinite(out.loss)
    with pytest.raises(ValueError, match="mc_token_ids"):
        model(batch["input_ids"], mc_token_ids=torch.tensor([[5, 7]]))
    with pytest.raises(ValueError, match="non-empty"):
        hf_variants.format_gpt1_inputs([[]], start, delim, extract, PAD)
