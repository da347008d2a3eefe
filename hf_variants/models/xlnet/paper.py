"""XLNet's paper: the model card's paragraph (what the variant changes and why) and the
citation, read through ``SPEC.paper``. Data only."""

from ...registry import VariantInfo

PAPER = VariantInfo(
    "XLNet",
    "XLNet is a generalized autoregressive model: it maximizes the likelihood over random factorization "
    "orders of the sequence (permutation language modelling) using two-stream self-attention, so it sees "
    "bidirectional context without [MASK] tokens, and it borrows Transformer-XL's relative positional "
    "encodings and segment recurrence.",
    "XLNet: Generalized Autoregressive Pretraining for Language Understanding",
    "https://arxiv.org/abs/1906.08237",
    """@inproceedings{yang2019xlnet,
  title = {{XLNet}: Generalized Autoregressive Pretraining for Language Understanding},
  author = {Yang, Zhilin and Dai, Zihang and Yang, Yiming and Carbonell, Jaime and Salakhutdinov, Ruslan
        and Le, Quoc V.},
  booktitle = {Advances in Neural Information Processing Systems 32 (NeurIPS)},
  year = {2019}
}""",
)
