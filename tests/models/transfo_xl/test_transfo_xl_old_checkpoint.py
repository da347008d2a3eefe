"""Converting checkpoints in the OLD transformers TransfoXL format (transformers < 5).

The test writes such a checkpoint itself: config.json with the old field names, weights under the
old key names and shapes of transformers 4.x's TransfoXLLMHeadModel (fused ``qkv_net``,
``pos_ff.CoreNet``, ``word_emb.emb_layers`` / ``emb_projs``, ``crit.out_layers`` / ``out_projs``
/ ``cluster_weight``), as safetensors (tied duplicates dropped) or pytorch_model.bin (both names),
and a vocab.pkl written with the standard pickle of a dict. The converted model's log-probabilities
equal ``old_format_log_probs``, a direct time-major implementation of 4.x's equations written
here from the old tensors (zero memory of mem_len on the first segment and ``same_length``, as
4.x ran). The vocabulary pickle is read only on opt-in, and a pickle naming anything but plain
containers (os.system) is refused before it can run.
"""

import json
import os
import pickle
from collections import Counter, OrderedDict

import pytest
import torch
from safetensors.torch import save_file
from torch.nn import functional as F

from hf_variants import convert_old_transfo_xl_checkpoint
from hf_variants.models.transfo_xl.convert_old_checkpoint import read_plain_pickle

VOCAB, CUTOFFS, D_MODEL, HEADS, D_HEAD, D_INNER, LAYERS, MEM_LEN = 60, [10, 25, 40], 16, 2, 8, 24, 2, 4


def old_config(div_val: int, d_embed: int, untie_r: bool) -> dict:
    return {
        "model_type": "transfo-xl",
        "architectures": ["TransfoXLLMHeadModel"],
        "vocab_size": VOCAB,
        "cutoffs": CUTOFFS,
        "d_model": D_MODEL,
        "d_embed": d_embed,
        "n_head": HEADS,
        "d_head": D_HEAD,
        "d_inner": D_INNER,
        "div_val": div_val,
        "pre_lnorm": False,
        "n_layer": LAYERS,
        "mem_len": MEM_LEN,
        "clamp_len": 3,
        "same_length": True,
        "attn_type": 0,
        "sample_softmax": -1,
        "adaptive": True,
        "dropout": 0.1,
        "dropatt": 0.0,
        "untie_r": untie_r,
        "init": "normal",
        "init_range": 0.01,
        "proj_init_std": 0.01,
        "init_std": 0.02,
        "layer_norm_epsilon": 1e-5,
        "eos_token_id": 1,
        "tie_projs": [False, True, True, True],
        "tie_word_embeddings": True,
    }


def old_state_dict(config: dict) -> dict[str, torch.Tensor]:
    """Random tensors under transformers 4.x's TransfoXLLMHeadModel names and shapes, tied
    tensors stored under both names (as pytorch_model.bin kept them)."""
    generator = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=generator) * 0.3

    div_val, d_embed = config["div_val"], config["d_embed"]
    edges = [0, *CUTOFFS, VOCAB]
    widths = [d_embed // div_val**k for k in range(len(edges) - 1)]
    state = {"transformer.pos_emb.inv_freq": 1 / 10000 ** (torch.arange(0.0, D_MODEL, 2.0) / D_MODEL)}
    if div_val == 1:
        state["transformer.word_emb.emb_layers.0.weight"] = rand(VOCAB, d_embed)
        if d_embed != D_MODEL:
            state["transformer.word_emb.emb_projs.0"] = rand(D_MODEL, d_embed)
    else:
        for k, width in enumerate(widths):
            state[f"transformer.word_emb.emb_layers.{k}.weight"] = rand(edges[k + 1] - edges[k], width)
            state[f"transformer.word_emb.emb_projs.{k}"] = rand(D_MODEL, width)
    bias_owner = "transformer.layers.{i}.dec_attn" if config["untie_r"] else "transformer"
    for i in range(LAYERS):
        layer = f"transformer.layers.{i}"
        state[f"{layer}.dec_attn.qkv_net.weight"] = rand(3 * HEADS * D_HEAD, D_MODEL)
        state[f"{layer}.dec_attn.r_net.weight"] = rand(HEADS * D_HEAD, D_MODEL)
        state[f"{layer}.dec_attn.o_net.weight"] = rand(D_MODEL, HEADS * D_HEAD)
        for norm in ("dec_attn.layer_norm", "pos_ff.layer_norm"):
            state[f"{layer}.{norm}.weight"], state[f"{layer}.{norm}.bias"] = 1 + rand(D_MODEL), rand(D_MODEL)
        state[f"{layer}.pos_ff.CoreNet.0.weight"], state[f"{layer}.pos_ff.CoreNet.0.bias"] = (
            rand(D_INNER, D_MODEL),
            rand(D_INNER),
        )
        state[f"{layer}.pos_ff.CoreNet.3.weight"], state[f"{layer}.pos_ff.CoreNet.3.bias"] = (
            rand(D_MODEL, D_INNER),
            rand(D_MODEL),
        )
        for name in ("r_w_bias", "r_r_bias"):
            state[f"{bias_owner.format(i=i)}.{name}"] = rand(HEADS, D_HEAD)
    state["crit.cluster_weight"], state["crit.cluster_bias"] = rand(len(CUTOFFS), d_embed), rand(len(CUTOFFS))
    if div_val == 1:
        state["crit.out_layers.0.weight"] = state["transformer.word_emb.emb_layers.0.weight"]
        state["crit.out_layers.0.bias"] = rand(VOCAB)
        if d_embed != D_MODEL:
            for k in range(len(widths)):
                state[f"crit.out_projs.{k}"] = (
                    rand(D_MODEL, d_embed) if k == 0 else state["transformer.word_emb.emb_projs.0"]
                )
    else:
        for k in range(len(widths)):
            state[f"crit.out_layers.{k}.weight"] = state[f"transformer.word_emb.emb_layers.{k}.weight"]
            state[f"crit.out_layers.{k}.bias"] = rand(edges[k + 1] - edges[k])
            state[f"crit.out_projs.{k}"] = (
                rand(D_MODEL, widths[k]) if k == 0 else state[f"transformer.word_emb.emb_projs.{k}"]
            )
    return state


def old_format_log_probs(state: dict, config: dict, input_ids: torch.Tensor) -> torch.Tensor:
    """(B, T) ids -> (B, T, V) log-probabilities, computed as transformers 4.x's TransfoXLLMHeadModel
    did (time-major; first segment with a zero memory of mem_len; same_length; clamp_len)."""
    div_val, d_embed = config["div_val"], config["d_embed"]
    edges = [0, *CUTOFFS, VOCAB]
    ids = input_ids.t()  # (T, B)
    qlen, batch = ids.shape
    if div_val == 1:
        embedded = state["transformer.word_emb.emb_layers.0.weight"][ids]
        if d_embed != D_MODEL:
            embedded = embedded @ state["transformer.word_emb.emb_projs.0"].t()
    else:
        embedded = torch.zeros(qlen, batch, D_MODEL)
        for k in range(len(edges) - 1):
            inside = (ids >= edges[k]) & (ids < edges[k + 1])
            local = (ids - edges[k]).clamp(0, edges[k + 1] - edges[k] - 1)
            projected = (
                state[f"transformer.word_emb.emb_layers.{k}.weight"][local]
                @ state[f"transformer.word_emb.emb_projs.{k}"].t()
            )
            embedded = torch.where(inside[..., None], projected, embedded)
    hidden = embedded * D_MODEL**0.5
    mlen = MEM_LEN
    klen = mlen + qlen
    ones = torch.ones(qlen, klen)
    shift = qlen - (klen - MEM_LEN) if klen - MEM_LEN > 0 else qlen
    mask = (torch.triu(ones, 1 + mlen) + torch.tril(ones, -shift)).bool()[:, :, None, None]
    positions = torch.arange(klen - 1, -1, -1.0).clamp(max=config["clamp_len"])
    angles = positions[:, None] * state["transformer.pos_emb.inv_freq"][None]
    pos_emb = torch.cat([angles.sin(), angles.cos()], dim=-1)  # (klen, D_MODEL)
    for i in range(LAYERS):
        layer = f"transformer.layers.{i}"
        owner = f"{layer}.dec_attn" if config["untie_r"] else "transformer"
        memory = torch.zeros(mlen, batch, D_MODEL)
        heads = torch.cat([memory, hidden]) @ state[f"{layer}.dec_attn.qkv_net.weight"].t()
        q, k, v = heads.chunk(3, dim=-1)
        q = q[-qlen:].reshape(qlen, batch, HEADS, D_HEAD)
        k, v = k.reshape(klen, batch, HEADS, D_HEAD), v.reshape(klen, batch, HEADS, D_HEAD)
        r = (pos_emb @ state[f"{layer}.dec_attn.r_net.weight"].t()).reshape(klen, HEADS, D_HEAD)
        content = torch.einsum("ibnd,jbnd->ijbn", q + state[f"{owner}.r_w_bias"], k)
        position = torch.einsum("ibnd,jnd->ijbn", q + state[f"{owner}.r_r_bias"], r)
        padded = torch.cat([torch.zeros(qlen, 1, batch, HEADS), position], dim=1)
        position = padded.view(klen + 1, qlen, batch, HEADS)[1:].view_as(position)  # the relative shift
        scores = ((content + position) / D_HEAD**0.5).masked_fill(mask, torch.finfo(torch.float32).min)
        context = torch.einsum("ijbn,jbnd->ibnd", scores.softmax(dim=1), v).reshape(qlen, batch, HEADS * D_HEAD)
        hidden = F.layer_norm(
            hidden + context @ state[f"{layer}.dec_attn.o_net.weight"].t(),
            (D_MODEL,),
            state[f"{layer}.dec_attn.layer_norm.weight"],
            state[f"{layer}.dec_attn.layer_norm.bias"],
        )
        inner = F.relu(hidden @ state[f"{layer}.pos_ff.CoreNet.0.weight"].t() + state[f"{layer}.pos_ff.CoreNet.0.bias"])
        hidden = F.layer_norm(
            hidden + inner @ state[f"{layer}.pos_ff.CoreNet.3.weight"].t() + state[f"{layer}.pos_ff.CoreNet.3.bias"],
            (D_MODEL,),
            state[f"{layer}.pos_ff.layer_norm.weight"],
            state[f"{layer}.pos_ff.layer_norm.bias"],
        )
    flat = hidden.transpose(0, 1).reshape(-1, D_MODEL)

    def scores_of(k):  # cluster k's logits: 4.x's _compute_logit with the cluster's rows
        proj = state.get(f"crit.out_projs.{k}")
        projected = flat if proj is None else flat @ proj
        if div_val == 1:
            return (
                projected @ state["crit.out_layers.0.weight"][edges[k] : edges[k + 1]].t()
                + state["crit.out_layers.0.bias"][edges[k] : edges[k + 1]]
            )
        return projected @ state[f"crit.out_layers.{k}.weight"].t() + state[f"crit.out_layers.{k}.bias"]

    head = torch.cat(
        [
            scores_of(0),
            (flat if "crit.out_projs.0" not in state else flat @ state["crit.out_projs.0"])
            @ state["crit.cluster_weight"].t()
            + state["crit.cluster_bias"],
        ],
        dim=-1,
    ).log_softmax(-1)
    pieces = [head[:, : CUTOFFS[0]]] + [
        head[:, CUTOFFS[0] + k - 1, None] + scores_of(k).log_softmax(-1) for k in range(1, len(edges) - 1)
    ]
    return torch.cat(pieces, dim=-1).reshape(batch, qlen, VOCAB)


def write_old_checkpoint(folder, config: dict, state: dict, weights_format: str, vocabulary: bytes | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    if weights_format.startswith("safetensors"):  # safe serialization keeps one name per shared tensor
        seen, unique = set(), {}
        order = reversed(state.items()) if weights_format == "safetensors-softmax-names" else state.items()
        for key, tensor in order:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                unique[key] = tensor.contiguous()
        save_file(unique, folder / "model.safetensors")
    else:
        torch.save(state, folder / "pytorch_model.bin")
    if vocabulary is not None:
        (folder / "vocab.pkl").write_bytes(vocabulary)


def plain_vocabulary() -> bytes:
    symbols = ["<unk>", "<eos>"] + [f"word{i}" for i in range(VOCAB - 2)]
    return pickle.dumps(
        {
            "idx2sym": symbols,
            "sym2idx": OrderedDict((s, i) for i, s in enumerate(symbols)),
            "counter": Counter({s: VOCAB - i for i, s in enumerate(symbols)}),
            "lower_case": False,
            "special": ["<eos>"],
            "min_freq": 0,
            "max_size": None,
            "delimiter": None,
        }
    )


@pytest.mark.parametrize(
    "div_val,d_embed,untie_r,weights_format",
    [
        (2, D_MODEL, True, "safetensors"),  # the WT103 large kind (div_val 4 there): adaptive input, per-layer biases
        (1, D_MODEL, False, "bin"),  # the WT103 base kind: one table, shared biases, both names stored
        (2, D_MODEL, True, "safetensors-softmax-names"),  # tied tensors kept under the softmax's names only
        (1, 12, True, "bin"),  # one projected table, tail projections tied to it
    ],
)
def test_converted_model_equals_the_old_format_equations(tmp_path, div_val, d_embed, untie_r, weights_format):
    config = old_config(div_val, d_embed, untie_r)
    state = old_state_dict(config)
    write_old_checkpoint(tmp_path / "old", config, state, weights_format)
    model, tokenizer = convert_old_transfo_xl_checkpoint(tmp_path / "old", tmp_path / "new")
    assert tokenizer is None and not (tmp_path / "new" / "vocab.pkl").exists()
    ids = torch.randint(0, VOCAB, (2, 6), generator=torch.Generator().manual_seed(1))
    zero_memory = [torch.zeros(MEM_LEN, 2, D_MODEL) for _ in range(LAYERS)]  # 4.x's first-segment memory
    with torch.no_grad():
        ours = model(ids, mems=zero_memory).logits
    torch.testing.assert_close(ours, old_format_log_probs(state, config, ids), atol=1e-5, rtol=0)
    reloaded = type(model).from_pretrained(tmp_path / "new").eval()
    with torch.no_grad():
        torch.testing.assert_close(reloaded(ids, mems=zero_memory).logits, ours, atol=0, rtol=0)


def test_vocabulary_is_read_only_on_opt_in_and_saved_as_json(tmp_path):
    config = old_config(2, D_MODEL, True)
    write_old_checkpoint(tmp_path / "old", config, old_state_dict(config), "safetensors", plain_vocabulary())
    _, tokenizer = convert_old_transfo_xl_checkpoint(tmp_path / "old", tmp_path / "new", unpickle_vocabulary=True)
    assert len(tokenizer) == VOCAB and tokenizer.convert_tokens_to_ids("word7") == 9
    assert tokenizer("word0 unseen word5")["input_ids"] == [2, 0, 7, 1]  # <unk> for unseen, <eos> appended
    saved = json.loads((tmp_path / "new" / "tokenizer.json").read_text())
    assert saved["model"]["vocab"]["word5"] == 7 and not list((tmp_path / "new").glob("*.pkl"))


class RunsShellCommand:
    def __reduce__(self):
        return os.system, ("echo pwned > pwned.txt",)


def test_a_pickle_that_would_call_os_system_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    malicious = pickle.dumps({"idx2sym": ["<unk>", "<eos>"], "payload": RunsShellCommand()})
    config = old_config(2, D_MODEL, True)
    write_old_checkpoint(tmp_path / "old", config, old_state_dict(config), "safetensors", malicious)
    with pytest.raises(pickle.UnpicklingError, match=r"refused to load (posix|os)\.system"):
        convert_old_transfo_xl_checkpoint(tmp_path / "old", unpickle_vocabulary=True)
    assert not (tmp_path / "pwned.txt").exists()
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
        read_plain_pickle_bytes(tmp_path, b"cbuiltins\neval\n(S'1+1'\ntR.")
    # Without the opt-in the pickle is never opened.
    model, tokenizer = convert_old_transfo_xl_checkpoint(tmp_path / "old")
    assert tokenizer is None and not (tmp_path / "pwned.txt").exists()


def read_plain_pickle_bytes(folder, payload: bytes):
    path = folder / "payload.pkl"
    path.write_bytes(payload)
    return read_plain_pickle(path)


@pytest.mark.parametrize(
    "change,message",
    [
        ({"model_type": "gpt2"}, "expected an old transformers TransfoXL config"),
        ({"pre_lnorm": True}, "pre_lnorm=True"),
        ({"sample_softmax": 100}, "sampled softmax"),
        ({"tie_projs": [False, True, False, True]}, "tie_projs"),
    ],
)
def test_configs_ours_cannot_compute_are_refused(tmp_path, change, message):
    config = {**old_config(2, D_MODEL, True), **change}
    write_old_checkpoint(tmp_path / "old", config, old_state_dict(old_config(2, D_MODEL, True)), "safetensors")
    with pytest.raises(ValueError, match=message):
        convert_old_transfo_xl_checkpoint(tmp_path / "old")


def test_weights_that_do_not_fit_the_config_are_refused(tmp_path):
    config = old_config(2, D_MODEL, True)
    state = old_state_dict(config)
    state["transformer.layers.0.dec_attn.extra.weight"] = torch.zeros(2)
    write_old_checkpoint(tmp_path / "old", config, state, "bin")
    with pytest.raises(ValueError, match="no mapping"):
        convert_old_transfo_xl_checkpoint(tmp_path / "old")
