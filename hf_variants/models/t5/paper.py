"""T5's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "T5",
    "T5 casts every task as text-to-text with an encoder-decoder Transformer that uses relative position "
    "buckets and pre-LayerNorm (RMS) blocks, pretrained with span corruption: random spans are replaced "
    "by sentinel tokens and the decoder generates the dropped spans.",
    "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
    "https://arxiv.org/abs/1910.10683",
    """@article{raffel2020t5,
  title = {Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer},
  author = {Raffel, Colin and Shazeer, Noam and Roberts, Adam and Lee, Katherine and Narang, Sharan
        and Matena, Michael and Zhou, Yanqi and Li, Wei and Liu, Peter J.},
  journal = {Journal of Machine Learning Research},
  volume = {21},
  number = {140},
  pages = {1--67},
  year = {2020}
}""",
)
