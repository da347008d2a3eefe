"""T5 against transformers' T5 classes: random weights, tiny configs, fp32, max abs diff <= 1e-5.

Every head, v1.0 (ReLU, tied output with the d_model^-0.5 rescale) and v1.1 (gated-GELU, no
rescale), eager and sdpa, right and left padding, both conversion directions; greedy and beam
generation token for token; ``from_pretrained`` of folders saved by transformers, including an
older v1.1 checkpoint with its own (untied) output layer.
"""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

import hf_variants
from hf_variants.models.t5 import T5ForConditionalGeneration
from hf_variants.models.t5.modeling_t5 import relative_position_bucket
from tests.common.parity import assert_same_seq2seq_attentions

TOL = 1e-5
HEADS = (
    "Model",
    "ForConditionalGeneration",
    "EncoderModel",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
)
VERSIONS = {
    "v1.0": dict(feed_forward_proj="relu", tie_word_embeddings=True),
    "v1.1": dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False),
}
EOS = 1


def their_config(version: str, backend: str = "sdpa", **overrides) -> transformers.T5Config:
    # 8 buckets up to distance 20 over 11 tokens: exact and logarithmic buckets, both directions.
    config = transformers.T5Config(
        **{
            **dict(
                vocab_size=99,
                d_model=32,
                d_kv=8,
                d_ff=37,
                num_layers=2,
                num_decoder_layers=3,
                num_heads=4,
                relative_attention_num_buckets=8,
                relative_attention_max_distance=20,
                dropout_rate=0.0,
                decoder_start_token_id=0,
                num_labels=3,
            ),
            **VERSIONS[version],
            **overrides,
        }
    )
    config._attn_implementation = backend
    return config


def their_model(head: str, version: str, backend: str = "sdpa", seed: int = 0, **overrides):
    torch.manual_seed(seed)
    overrides.setdefault("num_labels", 2 if head == "ForQuestionAnswering" else 3)
    return getattr(transformers, f"T5{head}")(their_config(version, backend, **overrides)).eval()


def batch(padding_side: str, seed: int = 1) -> dict[str, torch.Tensor]:
    """(3, 11) source ids, each row ending in EOS, row 1 shorter (padded on ``padding_side``), and a (3, 7) target."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, 99, (3, 11), generator=generator)
    ids[:, -1] = EOS
    mask = torch.ones_like(ids)
    short = torch.cat([ids[1, 3:-1], torch.tensor([EOS])])  # 8 tokens
    if padding_side == "right":
        ids[1], mask[1] = torch.cat([short, torch.zeros(3, dtype=torch.long)]), torch.tensor([1] * 8 + [0] * 3)
    else:
        ids[1], mask[1] = torch.cat([torch.zeros(3, dtype=torch.long), short]), torch.tensor([0] * 3 + [1] * 8)
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "decoder_input_ids": torch.randint(0, 99, (3, 7), generator=generator),
    }


def call_inputs(head: str, inputs: dict) -> dict:
    if head in ("Model", "ForConditionalGeneration"):
        return inputs
    return {k: v for k, v in inputs.items() if k != "decoder_input_ids"}


def compared_outputs(head: str, output, mask: torch.Tensor) -> list[torch.Tensor]:
    """The outputs both libraries define: encoder-only heads at real tokens (states at padding are unspecified)."""
    if head in ("EncoderModel", "ForTokenClassification"):
        key = "last_hidden_state" if head == "EncoderModel" else "logits"
        return [output[key][mask.bool()]]
    if head == "ForQuestionAnswering":
        return [output.start_logits, output.end_logits, output.encoder_last_hidden_state[mask.bool()]]
    if head == "ForSequenceClassification":
        return [output.logits]
    key = "logits" if head == "ForConditionalGeneration" else "last_hidden_state"
    return [output[key], output.encoder_last_hidden_state[mask.bool()]]


# Both paths of the speed plug-in (config.padding_free, hf_variants/modules/fast_path.py): the plain
# PyTorch path, and the packed encoder that runs on CPU by default.
PATHS = {"plain": False, "fast": True}


def assert_close(head, a, b, mask):
    for x, y in zip(compared_outputs(head, a, mask), compared_outputs(head, b, mask)):
        assert x.shape == y.shape
        assert (x - y).abs().max().item() <= TOL


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("backend", ["eager", "sdpa"])
@pytest.mark.parametrize("version", list(VERSIONS))
@pytest.mark.parametrize("head", HEADS)
def test_parity_both_directions(head, version, backend, path):
    theirs = their_model(head, version, backend)
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config.padding_free = PATHS[path]
    assert type(ours).__module__.startswith("hf_variants.models.t5") and ours.config.model_type == "hfv_t5"
    assert ours.config.rescales_output == (version == "v1.0")
    back = hf_variants.to_transformers(ours).eval()
    assert type(back) is type(theirs)
    for padding_side in ("right", "left"):
        inputs = batch(padding_side)
        kwargs = call_inputs(head, inputs)
        with torch.no_grad():
            expected = theirs(**kwargs)
            assert_close(head, expected, ours(**kwargs), inputs["attention_mask"])
            assert_close(head, expected, back(**kwargs), inputs["attention_mask"])


@pytest.mark.parametrize("version", list(VERSIONS))
def test_our_random_model_to_transformers(version):
    """Ours built from our own config (not converted from theirs) -> transformers gives the same logits."""
    config = hf_variants.from_transformers(their_model("ForConditionalGeneration", version)).config
    torch.manual_seed(3)
    ours = T5ForConditionalGeneration(config).eval()
    if not config.tie_word_embeddings:
        # transformers' T5 always ties its output layer: an untied one converts exactly only when equal.
        with torch.no_grad():
            ours.lm_head.weight.copy_(ours.get_input_embeddings().weight)
    theirs = hf_variants.to_transformers(ours).eval()
    inputs = batch("right")
    with torch.no_grad():
        assert (ours(**inputs).logits - theirs(**inputs).logits).abs().max().item() <= TOL


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("version", list(VERSIONS))
def test_loss_and_gradients_match(version, path):
    theirs = their_model("ForConditionalGeneration", version)
    ours = hf_variants.from_transformers(theirs)
    ours.config.padding_free = PATHS[path]
    inputs = batch("right")
    labels = inputs["decoder_input_ids"].clone()
    labels[0, -2:] = -100
    their_loss = theirs(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], labels=labels).loss
    our_loss = ours(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], labels=labels).loss
    assert abs(their_loss.item() - our_loss.item()) <= TOL
    their_loss.backward()
    our_loss.backward()
    their_grad = theirs.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight.grad
    our_grad = ours.transformer.encoder.position_bias.embedding.weight.grad
    assert our_grad.abs().sum() > 0 and (their_grad - our_grad).abs().max().item() <= TOL


@pytest.mark.parametrize("backend", ["eager", "sdpa"])
@pytest.mark.parametrize("version", list(VERSIONS))
def test_generation_equals_transformers(version, backend):
    # Equal depths: transformers' T5 sizes its generation cache by the encoder depth.
    theirs = their_model(
        "ForConditionalGeneration", version, backend, seed=4, initializer_factor=4.0, num_decoder_layers=2
    )
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = batch("left", seed=5)
    source = dict(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    for settings in (dict(num_beams=1), dict(num_beams=3, num_return_sequences=2)):
        expected = theirs.generate(**source, do_sample=False, max_new_tokens=10, **settings)
        got = ours.generate(**source, do_sample=False, max_new_tokens=10, **settings)
        assert torch.equal(expected, got)
    assert max(len(set(row[1:].tolist())) for row in got) >= 3  # real continuations, not one repeated token


def test_relative_position_buckets():
    """Exact buckets for small distances, log-spaced up to max_distance, one bucket beyond; the
    encoder's split by direction, the decoder's for the past only."""
    offsets = torch.tensor([-200, -20, -9, -4, -3, -1, 0, 1, 3, 4, 9, 200])
    bidirectional = relative_position_bucket(offsets, True, num_buckets=8, max_distance=20).tolist()
    # 4 buckets per direction: distances 0, 1 exact, then log-spaced 2..19 -> 2, 3; later keys offset by 4.
    assert bidirectional == [3, 3, 3, 2, 2, 1, 0, 5, 6, 6, 7, 7]
    causal = relative_position_bucket(offsets, False, num_buckets=8, max_distance=20).tolist()
    assert causal == [7, 7, 6, 4, 3, 1, 0, 0, 0, 0, 0, 0]
    # And transformers' buckets over every offset up to well past max_distance.
    from transformers.models.t5.modeling_t5 import T5Attention

    every = torch.arange(-300, 301)
    for bidirectional in (True, False):
        for buckets, distance in ((8, 20), (32, 128)):
            expected = T5Attention._relative_position_bucket(every, bidirectional, buckets, distance)
            assert torch.equal(relative_position_bucket(every, bidirectional, buckets, distance), expected)


HEAD_CLASSES = {head: getattr(transformers, f"T5{head}") for head in HEADS}


@pytest.mark.parametrize("head", HEADS)
def test_from_pretrained_of_a_transformers_folder(head, tmp_path):
    theirs = their_model(head, "v1.0")
    theirs.save_pretrained(tmp_path)
    our_class = hf_variants.models.t5.SPEC.classes[head]
    ours = our_class.from_pretrained(tmp_path).eval()
    assert ours.config.model_type == "hfv_t5"
    inputs = batch("right")
    kwargs = call_inputs(head, inputs)
    with torch.no_grad():
        assert_close(head, theirs(**kwargs), ours(**kwargs), inputs["attention_mask"])


def test_from_pretrained_of_an_untied_v1_1_checkpoint(tmp_path):
    """Checkpoints such as google/t5-v1_1-* and flan-t5 say tie_word_embeddings=false and carry their
    own lm_head.weight: ours loads it as a separate output layer without the rescale."""
    theirs = their_model("ForConditionalGeneration", "v1.1")
    theirs.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["tie_word_embeddings"] = False
    config.pop("scale_decoder_outputs", None)
    (tmp_path / "config.json").write_text(json.dumps(config))
    state = load_file(tmp_path / "model.safetensors")
    output_layer = torch.randn(99, 32)
    state["lm_head.weight"] = output_layer
    save_file(state, tmp_path / "model.safetensors", metadata={"format": "pt"})
    ours = T5ForConditionalGeneration.from_pretrained(tmp_path).eval()
    assert not ours.config.tie_word_embeddings and not ours.config.rescales_output
    assert torch.equal(ours.lm_head.weight, output_layer)
    assert not torch.equal(ours.lm_head.weight, ours.get_input_embeddings().weight)
    inputs = batch("right")
    with torch.no_grad():
        decoder_states = theirs(**inputs, output_hidden_states=True).decoder_hidden_states[-1]
        assert (ours(**inputs).logits - decoder_states @ output_layer.T).abs().max().item() <= TOL


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_attention_probabilities_equal_transformers(padding_side):
    """output_attentions=True returns transformers' three families of probabilities."""
    theirs = their_model("ForConditionalGeneration", "v1.1", backend="eager")
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = batch(padding_side)
    with torch.no_grad():
        expected, got = theirs(**inputs, output_attentions=True), ours(**inputs, output_attentions=True)
    assert_same_seq2seq_attentions(expected, got, inputs["attention_mask"])
    assert got.cross_attentions[0].shape == (3, 4, 7, 11)  # (B, heads, target, source)


def training_batch(generator: torch.Generator) -> dict[str, torch.Tensor]:
    """4 right-padded sources of 5..11 tokens ending in EOS, and targets of 1..4 tokens plus EOS,
    padded with -100 (as DataCollatorForSeq2Seq pads labels): each model builds its own decoder
    inputs from the labels."""
    source_lengths = torch.randint(5, 12, (4,), generator=generator).tolist()
    target_lengths = torch.randint(2, 6, (4,), generator=generator).tolist()
    ids, mask = (
        torch.zeros(4, max(source_lengths), dtype=torch.long),
        torch.zeros(4, max(source_lengths), dtype=torch.long),
    )
    labels = torch.full((4, max(target_lengths)), -100)
    for row, (source, target) in enumerate(zip(source_lengths, target_lengths)):
        ids[row, :source] = torch.randint(2, 99, (source,), generator=generator)
        ids[row, source - 1] = EOS
        mask[row, :source] = 1
        labels[row, :target] = torch.randint(2, 99, (target,), generator=generator)
        labels[row, target - 1] = EOS
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("version", list(VERSIONS))
def test_training_steps_match_transformers(version, path):
    """Training, not one forward: train mode, padded batches of unequal sources and targets, and
    AdamW steps on both models from the same weights: the losses agree step after step, so the
    gradients (the encoder's and cross-attention's included) agreed at every step before. This is
    how the collapse of t5-mini's sentiment fine-tuning to one answer was traced to optimisation
    (transformers' T5 does the same), not to a bug of ours."""
    theirs = their_model("ForConditionalGeneration", version, seed=6).train()
    ours = hf_variants.from_transformers(theirs).train()
    ours.config.padding_free = PATHS[path]
    optimizers = [torch.optim.AdamW(model.parameters(), lr=1e-2) for model in (theirs, ours)]
    generator = torch.Generator().manual_seed(7)
    losses = []
    for _ in range(6):
        inputs = training_batch(generator)
        step_losses = []
        for model, optimizer in zip((theirs, ours), optimizers):
            loss = model(**inputs).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step_losses.append(loss.item())
        assert abs(step_losses[0] - step_losses[1]) <= TOL, step_losses
        losses.append(step_losses[1])
    assert losses[-1] < losses[0] - 0.1, losses  # the steps changed the weights (a real comparison)
    encoder_weight = ours.transformer.encoder.encoder.layers[0].attention.qkv.weight
    their_encoder_weight = theirs.encoder.block[0].layer[0].SelfAttention.q.weight
    assert torch.allclose(encoder_weight[: their_encoder_weight.shape[0]], their_encoder_weight, atol=TOL)


@pytest.mark.parametrize("head", ["ForConditionalGeneration", "EncoderModel"])
def test_padding_free_switch_packs_the_encoder_alone(head):
    """With ``config.padding_free`` (set on the model after it is built) the encoder's blocks run on
    the real tokens alone, (N, H), and the decoder's padded; with it off every block sees (B, T, H).
    Both give transformers' outputs (the parity tests above)."""
    ours = hf_variants.from_transformers(their_model(head, "v1.1")).eval()
    stacks = [ours.encoder] if head == "EncoderModel" else [ours.transformer.encoder, ours.transformer.decoder]
    inputs = call_inputs(head, batch("right"))
    real_tokens = int(inputs["attention_mask"].sum())
    for padding_free in (True, False):
        ours.config.padding_free = padding_free
        shapes = []
        hooks = [
            stack.encoder.layers[0].attention.register_forward_hook(lambda m, args, out: shapes.append(args[0].shape))
            for stack in stacks
        ]
        with torch.no_grad():
            ours(**inputs)
        for hook in hooks:
            hook.remove()
        encoder_shape = (real_tokens, 32) if padding_free else (3, 11, 32)
        assert shapes[0] == encoder_shape
        if head != "EncoderModel":
            assert shapes[1] == (3, 7, 32)
