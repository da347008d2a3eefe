"""ViT's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "ViT",
    "The Vision Transformer splits an image into fixed-size patches, embeds each patch linearly, prepends "
    "a [CLS] token, adds learned position embeddings and runs a standard pre-LayerNorm Transformer "
    "encoder; the [CLS] output feeds the classifier.",
    "An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale",
    "https://arxiv.org/abs/2010.11929",
    """@inproceedings{dosovitskiy2021vit,
  title = {An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale},
  author = {Dosovitskiy, Alexey and Beyer, Lucas and Kolesnikov, Alexander and Weissenborn, Dirk
        and Zhai, Xiaohua and Unterthiner, Thomas and Dehghani, Mostafa and Minderer, Matthias
        and Heigold, Georg and Gelly, Sylvain and Uszkoreit, Jakob and Houlsby, Neil},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2021},
  url = {https://openreview.net/forum?id=YicbFdNTTy}
}""",
)
