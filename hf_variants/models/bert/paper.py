"""BERT's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "BERT",
    "BERT is a bidirectional Transformer encoder pretrained with masked language modelling (15% of "
    "WordPiece tokens selected; 80% replaced by [MASK], 10% by a random token, 10% kept) and next-sentence "
    "prediction, using learned absolute position embeddings, segment embeddings and post-LayerNorm blocks. "
    "It is fine-tuned end to end with a small task head on the [CLS] or token representations.",
    "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
    "https://arxiv.org/abs/1810.04805",
    """@inproceedings{devlin-etal-2019-bert,
  title = {{BERT}: Pre-training of Deep Bidirectional Transformers for Language Understanding},
  author = {Devlin, Jacob and Chang, Ming-Wei and Lee, Kenton and Toutanova, Kristina},
  booktitle = {Proceedings of NAACL-HLT 2019},
  pages = {4171--4186},
  year = {2019},
  url = {https://aclanthology.org/N19-1423}
}""",
)
