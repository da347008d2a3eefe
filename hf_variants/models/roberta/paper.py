"""RoBERTa's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "RoBERTa",
    "RoBERTa keeps BERT's architecture but changes how it is pretrained: dynamic masking (a new mask each "
    "time a sequence is seen), no next-sentence prediction, full-length sequences packed across document "
    "boundaries, much larger batches and more data, and a byte-level BPE vocabulary.",
    "RoBERTa: A Robustly Optimized BERT Pretraining Approach",
    "https://arxiv.org/abs/1907.11692",
    """@article{liu2019roberta,
  title = {{RoBERTa}: A Robustly Optimized {BERT} Pretraining Approach},
  author = {Liu, Yinhan and Ott, Myle and Goyal, Naman and Du, Jingfei and Joshi, Mandar and Chen, Danqi
        and Levy, Omer and Lewis, Mike and Zettlemoyer, Luke and Stoyanov, Veselin},
  journal = {arXiv preprint arXiv:1907.11692},
  year = {2019}
}""",
)
