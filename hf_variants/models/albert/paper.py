"""ALBERT's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "ALBERT",
    "ALBERT reduces BERT's parameter count with a factorized embedding (vocabulary projected through a "
    "small dimension E before the hidden size H) and by sharing one set of layer parameters across all "
    "layers. It replaces next-sentence prediction with sentence-order prediction (SOP) and uses n-gram "
    "masking for the MLM objective.",
    "ALBERT: A Lite BERT for Self-supervised Learning of Language Representations",
    "https://arxiv.org/abs/1909.11942",
    """@inproceedings{lan2020albert,
  title = {{ALBERT}: A Lite {BERT} for Self-supervised Learning of Language Representations},
  author = {Lan, Zhenzhong and Chen, Mingda and Goodman, Sebastian and Gimpel, Kevin and Sharma, Piyush
        and Soricut, Radu},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2020},
  url = {https://openreview.net/forum?id=H1eA7AEtvS}
}""",
)
