"""Transformer-XL's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "Transformer-XL",
    "Transformer-XL is a causal language model that reuses the hidden states of the previous segment as "
    "a memory every layer attends to (segment-level recurrence, no gradient into the memory), with relative "
    "positional encodings so that positions stay coherent across segments; its dependency length grows "
    "with depth beyond the training segment.",
    "Transformer-XL: Attentive Language Models Beyond a Fixed-Length Context",
    "https://arxiv.org/abs/1901.02860",
    """@inproceedings{dai2019transformerxl,
  title = {Transformer-{XL}: Attentive Language Models beyond a Fixed-Length Context},
  author = {Dai, Zihang and Yang, Zhilin and Yang, Yiming and Carbonell, Jaime and Le, Quoc and Salakhutdinov, Ruslan},
  booktitle = {Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics},
  pages = {2978--2988},
  year = {2019}
}""",
)
