"""transformers' own common and generation tests against our original Transformer (transformers'
counterpart: Marian)."""

from functools import partial

from tests.transformers_common.harness import family_test, token_inputs

TransformerTransformersTest = family_test(
    "TransformerTransformersTest",
    "hfv_transformer",
    "transformer-mini",
    dict(hidden_size=37),
    # label_smoothing 0: the paper's 0.1 is a training choice; the loss tests compare with plain
    # cross-entropy, as transformers' Marian computes it.
    inputs_fn=partial(token_inputs, decoder=True),
    generates=True,
    decoder_layers=2,
    label_smoothing=0.0,
)
TransformerTransformersTest.__module__ = __name__
TransformerTransformersTest.is_encoder_decoder = True
