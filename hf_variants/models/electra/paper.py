"""ELECTRA's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "ELECTRA",
    "ELECTRA pretrains with replaced-token detection: a small masked-language-model generator fills in "
    "masked positions, and the discriminator (the model kept for fine-tuning) classifies every token as "
    "original or replaced. Learning from all tokens rather than the 15% masked ones makes it far more "
    "compute-efficient than MLM. Generator and discriminator share the token embeddings.",
    "ELECTRA: Pre-training Text Encoders as Discriminators Rather Than Generators",
    "https://arxiv.org/abs/2003.10555",
    """@inproceedings{clark2020electra,
  title = {{ELECTRA}: Pre-training Text Encoders as Discriminators Rather Than Generators},
  author = {Clark, Kevin and Luong, Minh-Thang and Le, Quoc V. and Manning, Christopher D.},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2020},
  url = {https://openreview.net/forum?id=r1xMH1BtvB}
}""",
)
