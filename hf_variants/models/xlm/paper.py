"""XLM's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "XLM",
    "XLM pretrains a cross-lingual encoder with causal or masked language modelling on monolingual text "
    "and translation language modelling (TLM) on parallel sentences, with language embeddings and a "
    "shared BPE vocabulary across languages.",
    "Cross-lingual Language Model Pretraining",
    "https://arxiv.org/abs/1901.07291",
    """@inproceedings{lample2019xlm,
  title = {Cross-lingual Language Model Pretraining},
  author = {Lample, Guillaume and Conneau, Alexis},
  booktitle = {Advances in Neural Information Processing Systems 32 (NeurIPS)},
  year = {2019}
}""",
)
