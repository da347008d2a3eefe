"""transformers' own common and generation tests against our XLNet."""

from harness import family_test

XLNetTransformersTest = family_test(
    "XLNetTransformersTest", "hfv_xlnet", "xlnet-mini", dict(hidden_size=37), generates=True, head_dim=8)
XLNetTransformersTest.__module__ = __name__
