"""XLM configuration (Lample & Conneau 2019, "Cross-lingual Language Model Pretraining").

Field names are the shared :class:`TransformerConfig`'s (``hidden_size``, ``num_hidden_layers``,
...); transformers' XLMConfig names (``emb_dim``, ``n_layers``, ``n_heads``, ``dropout``,
``causal``, ...) are aliases of them, so ``config.emb_dim`` reads as in transformers.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict

from ..configuration_base import VariantConfig

SUMMARY_TYPES = ("first", "last", "mean")  # transformers' SequenceSummary types that XLM can express here


@strict
class XLMConfig(VariantConfig):
    """Defaults are xlm-mlm-en-2048 (the English MLM model); see ``modeling_configs/xlm-*`` for the
    others. The paper's settings: post-LN blocks (as BERT), exact GELU, dropout 0.1 on the embeddings,
    sub-layer outputs and attention probabilities, LayerNorm eps 1e-12, learned positions (the
    original code's ``--sinusoidal_embeddings`` option gives fixed sinusoids), no segment
    embeddings, and a language embedding added to every token (``use_lang_emb``; XLM-100 and
    XLM-17 go without). ``is_decoder`` (alias ``causal``) makes attention causal: the CLM objective.

    Two behaviours follow transformers' XLM rather than BERT: ``token_type_ids``, if given, are
    looked up in the *word* embedding table and added (XLM has no segment embeddings), and when no
    ``attention_mask`` is given, tokens equal to ``pad_token_id`` are masked.
    """

    model_type = "hfv_xlm"
    attribute_map = {
        "emb_dim": "hidden_size",
        "n_layers": "num_hidden_layers",
        "n_heads": "num_attention_heads",
        "n_words": "vocab_size",
        "dropout": "hidden_dropout_prob",
        "attention_dropout": "attention_probs_dropout_prob",
        "causal": "is_decoder",
        "pad_index": "pad_token_id",
        "bos_index": "bos_token_id",
        "eos_index": "eos_token_id",
    }

    vocab_size: int = (
        30145  # shared BPE vocabulary (30,145 for en-2048; 95,000 for the 15 XNLI languages; 200,000 for 17/100)
    )
    hidden_size: int = 2048  # emb_dim: 1024 for the XNLI-15 models, 1280 for XLM-17/100, 2048 for English
    num_hidden_layers: int = 12  # n_layers: 12 (en, XNLI-15), 16 (XLM-17/100), 6 (en-fr and the other pairs)
    num_attention_heads: int = 16  # n_heads: 16, or 8 for the 1024-wide models
    intermediate_size: int = 8192  # FFN width: always 4 * emb_dim in XLM
    hidden_act: str = "gelu"  # gelu_activation=True: exact GELU; "relu" for gelu_activation=False
    type_vocab_size: int = 0  # no segment embeddings (token_type_ids index the word table, as in transformers)
    n_langs: int = 1  # languages the model knows (rows of the language embedding): 15, 17, 100, ...
    use_lang_emb: bool = True  # add a language embedding to every token (only when n_langs > 1)
    lang2id: dict[str, int] | None = None  # language code -> id, e.g. {"en": 4, "fr": 5} (langs inputs)
    id2lang: dict | None = None  # id -> language code (JSON turns the ids into strings)
    embed_init_std: float = 2048**-0.5  # std of the normal init of the embedding tables (paper code: emb_dim ** -0.5)
    asm: bool = False  # adaptive softmax output layer: not implemented here (must stay False)
    mask_token_id: int = (
        0  # the token generate() appends and predicts at each step (transformers' XLMConfig field and default)
    )
    lang_id: int = 0  # the language id of every position during generate() (transformers' XLMConfig field and default)
    pad_token_id: int | None = 2  # <pad> of XLM's vocabulary (<s>=0, </s>=1, <pad>=2, <unk>=3)
    bos_token_id: int | None = 0
    eos_token_id: int | None = 1
    summary_type: str = "first"  # the token XLMForSequenceClassification / ForMultipleChoice read: first | last | mean
    summary_use_proj: bool = True  # project the summary (to num_labels, or to H without summary_proj_to_labels)
    summary_proj_to_labels: bool = True
    summary_activation: str | None = None  # e.g. "tanh" after the projection; None: none
    summary_first_dropout: float = 0.1  # dropout on the summary before the projection
    summary_last_dropout: float = 0.0  # dropout after the projection and activation

    def check_architecture(self) -> None:
        super().check_architecture()
        if self.summary_type not in SUMMARY_TYPES:
            raise ValueError(f"summary_type must be one of {SUMMARY_TYPES} for XLM, got {self.summary_type!r}")
        if self.n_langs < 1:
            raise ValueError(f"n_langs must be >= 1, got {self.n_langs}")
        if self.asm:
            raise ValueError("asm=True (adaptive softmax) is not implemented by hf-variants' XLM; use asm=False")
        if self.type_vocab_size != 0:
            raise ValueError(f"XLM has no segment embeddings: type_vocab_size must be 0, got {self.type_vocab_size}")
        if self.embedding_size not in (None, self.hidden_size):
            raise ValueError(
                "XLM's prediction layer is tied to embeddings of width hidden_size: embedding_size must be None"
            )
        if not 0 <= self.lang_id < self.n_langs:
            raise ValueError(f"lang_id {self.lang_id} is outside [0, n_langs={self.n_langs})")
        if not 0 <= self.mask_token_id < self.vocab_size:
            raise ValueError(
                f"mask_token_id {self.mask_token_id} is outside the vocabulary (vocab_size={self.vocab_size})"
            )
        if self.lang2id is not None and any(not 0 <= i < self.n_langs for i in self.lang2id.values()):
            raise ValueError(f"lang2id {self.lang2id} has ids outside [0, n_langs={self.n_langs})")
        for name in ("summary_first_dropout", "summary_last_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
