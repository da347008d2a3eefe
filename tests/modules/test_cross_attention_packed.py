"""Cross-attention over a padded source (half the batch is padding, first decoder call): the same
logits, loss and gradients as transformers. T5 and the original Transformer (Marian), each written
in its own file, project every source position on the plain path (the old shared decoder's
projection of the real tokens only is gone with it); the padded keys are masked, so the results
equal transformers' full projection."""

import pytest
import torch
import transformers

import hf_variants


def reference(family: str) -> transformers.PreTrainedModel:
    torch.manual_seed(0)
    if family == "t5":
        config = transformers.T5Config(
            vocab_size=99,
            d_model=32,
            d_kv=8,
            d_ff=37,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            relative_attention_num_buckets=8,
            dropout_rate=0.0,
            decoder_start_token_id=0,
            pad_token_id=0,
            eos_token_id=1,
        )
        model = transformers.T5ForConditionalGeneration(config)
    else:
        config = transformers.MarianConfig(
            vocab_size=99,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=37,
            decoder_ffn_dim=37,
            max_position_embeddings=64,
            activation_function="relu",
            dropout=0.0,
            attention_dropout=0.0,
            activation_dropout=0.0,
            init_std=0.3,
            scale_embedding=True,
            pad_token_id=0,
            eos_token_id=1,
            decoder_start_token_id=0,
            forced_eos_token_id=None,
        )
        model = transformers.MarianMTModel(config)
    model.config._attn_implementation = "sdpa"
    return model


def padded_pairs(seed: int = 5):
    """A source batch that is half padding (right-padded), and labels of different lengths."""
    generator = torch.Generator().manual_seed(seed)
    lengths = [3, 12, 5, 2]
    input_ids = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        input_ids[row, :length] = torch.randint(2, 99, (length,), generator=generator)
    labels = torch.randint(2, 99, (len(lengths), 4), generator=generator)
    labels[0, 2:] = -100
    return input_ids, (input_ids != 0).long(), labels


@pytest.mark.parametrize("family", ["t5", "marian"])
def test_packed_cross_attention_projection_matches_transformers(family):
    theirs = reference(family)
    ours = hf_variants.from_transformers(theirs)
    ours.label_smoothing = 0.0  # the original Transformer's loss smooths by 0.1; Marian's does not
    input_ids, attention_mask, labels = padded_pairs()
    assert bool((attention_mask == 0).any())  # the padded keys the cross-attention must mask
    outputs = {}
    for name, model in (("transformers", theirs), ("ours", ours)):
        model.train()  # dropout is 0: train mode only so that gradients are compared as in a step
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        out.loss.backward()
        embeddings = model.get_input_embeddings().weight.grad
        outputs[name] = (out.logits, out.loss, embeddings)
    for theirs_tensor, ours_tensor in zip(outputs["transformers"], outputs["ours"]):
        torch.testing.assert_close(ours_tensor, theirs_tensor, atol=1e-5, rtol=0)


def test_generation_with_packed_cross_attention_equals_transformers():
    theirs = reference("t5").eval()
    ours = hf_variants.from_transformers(theirs).eval()
    input_ids, attention_mask, _ = padded_pairs(seed=9)
    config = transformers.GenerationConfig(
        max_new_tokens=6, do_sample=False, decoder_start_token_id=0, pad_token_id=0, eos_token_id=None
    )
    generated = [
        model.generate(input_ids=input_ids, attention_mask=attention_mask, generation_config=config)
        for model in (theirs, ours)
    ]
    assert torch.equal(generated[0], generated[1])
