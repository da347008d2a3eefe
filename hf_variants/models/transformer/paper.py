"""Transformer's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "Transformer",
    "The Transformer is an encoder-decoder built from attention alone: six post-LayerNorm encoder layers "
    "(self-attention and a ReLU feed-forward layer) and six decoder layers that add masked self-attention "
    "and attention over the encoder's output, with fixed sinusoidal positions, one embedding matrix shared by "
    "source, target and output layer (scaled by sqrt(d_model)), label smoothing 0.1 and Adam with an "
    "inverse square-root learning-rate schedule after 4,000 warm-up steps.",
    "Attention Is All You Need",
    "https://arxiv.org/abs/1706.03762",
    """@inproceedings{vaswani2017attention,
  title = {Attention Is All You Need},
  author = {Vaswani, Ashish and Shazeer, Noam and Parmar, Niki and Uszkoreit, Jakob and Jones, Llion
        and Gomez, Aidan N. and Kaiser, {\\L}ukasz and Polosukhin, Illia},
  booktitle = {Advances in Neural Information Processing Systems 30 (NeurIPS)},
  pages = {5998--6008},
  year = {2017}
}""",
)
