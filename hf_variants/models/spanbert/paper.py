"""SpanBERT's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "SpanBERT",
    "SpanBERT masks contiguous spans instead of single tokens (span lengths drawn from a clipped geometric "
    "distribution, p = 0.2, max 10, whole words, 15% of tokens in total) and adds the span-boundary "
    "objective (SBO): each masked token is predicted from the encodings of the two tokens just outside "
    "its span plus a relative position embedding. It drops next-sentence prediction and trains on single "
    "contiguous segments.",
    "SpanBERT: Improving Pre-training by Representing and Predicting Spans",
    "https://arxiv.org/abs/1907.10529",
    """@article{joshi-etal-2020-spanbert,
  title = {{SpanBERT}: Improving Pre-training by Representing and Predicting Spans},
  author = {Joshi, Mandar and Chen, Danqi and Liu, Yinhan and Weld, Daniel S. and Zettlemoyer, Luke
        and Levy, Omer},
  journal = {Transactions of the Association for Computational Linguistics},
  volume = {8},
  pages = {64--77},
  year = {2020},
  url = {https://aclanthology.org/2020.tacl-1.5}
}""",
)
