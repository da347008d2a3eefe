"""Train the tokenizers the Transformer family uses, with the `tokenizers` library.

`train_tokenizer(kind, texts, vocab_size)` returns a `transformers.PreTrainedTokenizerFast`
that round-trips through `save_pretrained` / `AutoTokenizer.from_pretrained` with its special
tokens, mask token and single/pair templates intact. Kinds:

- ``"wordpiece-uncased"`` / ``"wordpiece-cased"``: BERT. `BertNormalizer` (lower-cases and strips
  accents when uncased), `BertPreTokenizer` (whitespace + punctuation), WordPiece with ``##``
  continuations. Ids: ``[PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4``. Templates
  ``[CLS] A [SEP]`` and ``[CLS] A [SEP] B [SEP]`` with token_type_ids 0 then 1.
- ``"bpe"``: RoBERTa / GPT-2 byte-level BPE (no unknown bytes). Ids: ``<s>=0 <pad>=1 </s>=2
  <unk>=3 <mask>=4``. Templates ``<s> A </s>`` and ``<s> A </s></s> B </s>``; RoBERTa has no
  segment embeddings, so token_type_ids are all 0.
- ``"unigram"``: SentencePiece-style Unigram LM with the `Metaspace` pre-tokenizer (``▁`` marks a
  word start), as ALBERT, XLNet and T5 use. We follow ALBERT's conventions because ALBERT is the
  encoder in this library that uses it: lower-casing + NFKD accent stripping (ALBERT's
  ``do_lower_case=True``), ids ``<pad>=0 <unk>=1 [CLS]=2 [SEP]=3 [MASK]=4`` and the BERT-style
  template ``[CLS] A [SEP]`` / ``[CLS] A [SEP] B [SEP]`` with token_type_ids 0/1.
- ``"unigram-xlnet"``: XLNet's SentencePiece Unigram, as transformers' `XLNetTokenizer` and the
  original ``classifier_utils.py``: cased with NFKD accent stripping (``keep_accents=False``), ids
  ``<unk>=0 <s>=1 </s>=2 <cls>=3 <sep>=4 <pad>=5 <mask>=6 <eod>=7 <eop>=8`` (the released
  vocabulary's, so XLNetConfig's ``pad_token_id=5`` holds), the template ``A <sep> <cls>`` /
  ``A <sep> B <sep> <cls>`` with token_type_ids 0 for A (and its <sep>), 1 for B (and its <sep>),
  2 for <cls> (SEG_ID_A/B/CLS), and ``padding_side="left"``: XLNet's sequence heads read the
  <cls> at the last position, which left padding keeps in place for every row of a batch.
- ``"unigram-t5"``: T5's SentencePiece Unigram: cased, NFKC-normalised, ids ``<pad>=0 </s>=1
  <unk>=2``, ``</s>`` appended (``A </s>`` / ``A </s> B </s>``, no token_type_ids), and
  `extra_ids` sentinels ``<extra_id_0>`` ... at the top of the vocabulary in descending order
  (``<extra_id_0>`` has the largest id), as in T5's vocabulary, for span corruption.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

TOKENIZER_KINDS = ("wordpiece-uncased", "wordpiece-cased", "bpe", "unigram", "unigram-xlnet")
# Kinds with a different set of special tokens (no [CLS]/[SEP]/[MASK]): text-to-text models.
SEQ2SEQ_TOKENIZER_KINDS = ("unigram-t5",)

WORDPIECE_SPECIALS = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
T5_SPECIALS = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
BPE_SPECIALS = {
    "bos_token": "<s>",
    "pad_token": "<pad>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "mask_token": "<mask>",
    "cls_token": "<s>",
    "sep_token": "</s>",
}
UNIGRAM_SPECIALS = {
    "pad_token": "<pad>",
    "unk_token": "<unk>",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
# XLNet's special tokens in the released vocabulary's id order (<unk>=0 ... <eop>=8).
XLNET_SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>")
XLNET_SPECIALS = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "sep_token": "<sep>",
    "pad_token": "<pad>",
    "cls_token": "<cls>",
    "mask_token": "<mask>",
}
XLNET_EXTRA_SPECIALS = ["<eop>", "<eod>"]  # end of paragraph / document (XLNet's pretraining data)
# XLNet's segment ids (the original classifier_utils.py SEG_ID_A / SEG_ID_B / SEG_ID_CLS).
XLNET_SEGMENT_A, XLNET_SEGMENT_B, XLNET_SEGMENT_CLS = 0, 1, 2


def _ordered_unique(tokens: Iterable[str]) -> list[str]:
    """Special tokens in id order, without repeats (RoBERTa's <s> is both bos and cls)."""
    return list(dict.fromkeys(tokens))


def _bert_template(cls: str, sep: str, backend: Tokenizer) -> processors.TemplateProcessing:
    return processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))],
    )


def _wordpiece_backend(lowercase: bool) -> tuple[Tokenizer, list[str], str]:
    specials = _ordered_unique(
        WORDPIECE_SPECIALS[k] for k in ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token")
    )
    backend = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##"))
    backend.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=lowercase, lowercase=lowercase
    )
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    return backend, specials, "wordpiece"


def _bpe_backend() -> tuple[Tokenizer, list[str], str]:
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    backend = Tokenizer(models.BPE(unk_token=None))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    return backend, specials, "bpe"


def _unigram_backend(lowercase: bool = True, strip_accents: bool | None = None) -> tuple[Tokenizer, list[str], str]:
    """``strip_accents``: NFKD + accent stripping (default: with ``lowercase``, as ALBERT)."""
    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    backend = Tokenizer(models.Unigram())
    steps = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
    if lowercase if strip_accents is None else strip_accents:
        steps += [normalizers.NFKD(), normalizers.StripAccents()]
    if lowercase:
        steps.append(normalizers.Lowercase())
    backend.normalizer = normalizers.Sequence(steps)
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    return backend, specials, "unigram"


def _t5_unigram_backend() -> tuple[Tokenizer, list[str], str]:
    backend, _, model_kind = _unigram_backend(lowercase=False)
    backend.normalizer = normalizers.NFKC()  # SentencePiece's default nmt_nfkc, which T5 kept
    return backend, list(T5_SPECIALS.values()), model_kind


def _xlnet_unigram_backend() -> tuple[Tokenizer, list[str], str]:
    # XLNet is cased but strips accents (XLNetTokenizer's do_lower_case=False, keep_accents=False).
    backend, _, model_kind = _unigram_backend(lowercase=False, strip_accents=True)
    return backend, list(XLNET_SPECIAL_TOKENS), model_kind


def _xlnet_template(backend: Tokenizer) -> processors.TemplateProcessing:
    """``A <sep> <cls>`` / ``A <sep> B <sep> <cls>``: the summary token comes last (XLNet reads it there)."""
    a, b, cls = XLNET_SEGMENT_A, XLNET_SEGMENT_B, XLNET_SEGMENT_CLS
    return processors.TemplateProcessing(
        single=f"$A:{a} <sep>:{a} <cls>:{cls}",
        pair=f"$A:{a} <sep>:{a} $B:{b} <sep>:{b} <cls>:{cls}",
        special_tokens=[("<sep>", backend.token_to_id("<sep>")), ("<cls>", backend.token_to_id("<cls>"))],
    )


def _add_sentinels(backend: Tokenizer, extra_ids: int) -> list[str]:
    """Append ``<extra_id_{extra_ids - 1}>`` ... ``<extra_id_0>``, so <extra_id_0> gets the top id."""
    sentinels = [f"<extra_id_{k}>" for k in range(extra_ids)]
    backend.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in reversed(sentinels)])
    return sentinels


def _make_trainer(
    model_kind: str, vocab_size: int, specials: list[str], min_frequency: int, show_progress: bool
) -> trainers.Trainer:
    if model_kind == "wordpiece":
        return trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=specials,
            continuing_subword_prefix="##",
            show_progress=show_progress,
        )
    if model_kind == "bpe":
        return trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=specials,
            show_progress=show_progress,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
    return trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=specials, unk_token="<unk>", show_progress=show_progress
    )


def _non_empty(texts: Iterable[str]) -> Iterator[str]:
    for text in texts:
        if not isinstance(text, str):
            raise ValueError(f"train_tokenizer expects strings, got {type(text).__name__}")
        if text.strip():
            yield text


def train_tokenizer(
    kind: str,
    texts: Iterable[str],
    vocab_size: int,
    *,
    min_frequency: int = 2,
    model_max_length: int = 512,
    show_progress: bool = False,
    extra_ids: int = 100,
) -> PreTrainedTokenizerFast:
    """Train a tokenizer of the given `kind` on `texts` (streamed, never materialised).

    Args:
        kind: one of `TOKENIZER_KINDS` or `SEQ2SEQ_TOKENIZER_KINDS` (see the module docstring for
            what each reproduces).
        texts: an iterable of raw strings (paragraphs or documents); blank ones are skipped.
        vocab_size: target vocabulary size including the special tokens (5; XLNet's 9).
        min_frequency: minimum pair frequency for a merge (WordPiece/BPE only).
        model_max_length: stored in the tokenizer config (truncation limit).
        extra_ids: ``"unigram-t5"`` only: number of sentinel tokens, counted in `vocab_size`
            (T5: 100 of 32,100).

    Returns:
        A `PreTrainedTokenizerFast` with pad/unk/cls/sep/mask tokens set and the post-processor
        for single sequences and pairs installed.

    Not reproducible bit for bit across processes: `tokenizers`' WordPiece and BPE trainers give
    ids in hash-map order and break count ties by id (huggingface/tokenizers#1794), so two runs
    on the same texts can differ. Measured on the pretraining corpus (8,000 entries, session 21,
    one build of each pair on a corpus with 16 more words): two cased WordPiece builds held the
    same tokens with 427 ids permuted; two BPE builds the same merges, 37 of 7,739 in another
    order. A run that must match another reuses its saved
    tokenizer (run_pretraining's ``--tokenizer_name``) instead of training a new one.
    """
    if kind not in TOKENIZER_KINDS + SEQ2SEQ_TOKENIZER_KINDS:
        raise ValueError(
            f"unknown tokenizer kind {kind!r}; expected one of {TOKENIZER_KINDS + SEQ2SEQ_TOKENIZER_KINDS}"
        )
    if vocab_size < 100:
        raise ValueError(f"vocab_size={vocab_size} is too small (need at least 100)")
    if kind == "unigram-t5" and not 0 <= extra_ids <= vocab_size - 100:
        raise ValueError(f"extra_ids={extra_ids} must be in [0, vocab_size - 100] (vocab_size={vocab_size})")
    if kind.startswith("wordpiece"):
        backend, specials, model_kind = _wordpiece_backend(lowercase=kind == "wordpiece-uncased")
        named = WORDPIECE_SPECIALS
    elif kind == "bpe":
        backend, specials, model_kind = _bpe_backend()
        named = BPE_SPECIALS
    elif kind == "unigram-xlnet":
        backend, specials, model_kind = _xlnet_unigram_backend()
        named = XLNET_SPECIALS
    elif kind == "unigram-t5":
        backend, specials, model_kind = _t5_unigram_backend()
        named = T5_SPECIALS
        vocab_size -= extra_ids  # the sentinels are added after training
    else:
        backend, specials, model_kind = _unigram_backend()
        named = UNIGRAM_SPECIALS
    trainer = _make_trainer(model_kind, vocab_size, specials, min_frequency, show_progress)
    backend.train_from_iterator(_non_empty(texts), trainer=trainer)
    if backend.get_vocab_size() <= len(specials):
        raise ValueError("the training texts produced an empty vocabulary (are they all blank?)")

    if kind == "unigram-t5":
        backend.post_processor = processors.TemplateProcessing(
            single="$A:0 </s>:0", pair="$A:0 </s>:0 $B:0 </s>:0", special_tokens=[("</s>", backend.token_to_id("</s>"))]
        )
        sentinels = _add_sentinels(backend, extra_ids)
        return PreTrainedTokenizerFast(
            tokenizer_object=backend,
            model_max_length=model_max_length,
            model_input_names=["input_ids", "attention_mask"],
            extra_special_tokens=sentinels,
            **named,
        )
    if kind == "unigram-xlnet":
        backend.post_processor = _xlnet_template(backend)
        # As XLNetTokenizer: "<mask>" swallows the space before it; left padding keeps <cls> last.
        mask = AddedToken("<mask>", lstrip=True, rstrip=False, special=True, normalized=False)
        backend.add_special_tokens([mask])
        return PreTrainedTokenizerFast(
            tokenizer_object=backend,
            model_max_length=model_max_length,
            model_input_names=["input_ids", "token_type_ids", "attention_mask"],
            padding_side="left",
            extra_special_tokens=XLNET_EXTRA_SPECIALS,
            **{**XLNET_SPECIALS, "mask_token": mask},
        )
    if model_kind == "bpe":
        backend.post_processor = processors.RobertaProcessing(
            ("</s>", backend.token_to_id("</s>")),
            ("<s>", backend.token_to_id("<s>")),
            trim_offsets=True,
            add_prefix_space=False,
        )
    else:
        backend.post_processor = _bert_template(named["cls_token"], named["sep_token"], backend)

    # RoBERTa has no segment embeddings, so its tokenizer returns no token_type_ids.
    input_names = (
        ["input_ids", "attention_mask"] if model_kind == "bpe" else ["input_ids", "token_type_ids", "attention_mask"]
    )
    special_tokens = dict(named)
    if model_kind == "bpe":
        # As RoBERTa: "<mask>" swallows the space before it, so in "a <mask>" the mask stands
        # for a whole space-prefixed token ("Ġword") instead of leaving a stray "Ġ" behind.
        special_tokens["mask_token"] = AddedToken("<mask>", lstrip=True, rstrip=False, special=True, normalized=False)
        backend.add_special_tokens([special_tokens["mask_token"]])
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, model_max_length=model_max_length, model_input_names=input_names, **special_tokens
    )


def word_start_table(tokenizer: PreTrainedTokenizerFast) -> list[bool]:
    """For every vocabulary id, whether a token with that id begins a new word.

    Used by whole-word, span and n-gram masking when features carry no `word_ids`. The rule
    follows the tokenizer's model: WordPiece continuations start with its ``##`` prefix;
    byte-level BPE and Metaspace tokens begin a word when they carry the space marker (``Ġ`` /
    ``▁``), so a word is a whitespace-delimited word, as in fairseq's RoBERTa whole-word masking
    and ALBERT's `_is_start_piece_sp`. Special tokens count as word starts (they are never part
    of a masked word anyway). A token right after a special token is always a word start; the
    collators handle that position rule.
    """
    backend = tokenizer.backend_tokenizer
    model = backend.model
    vocab = backend.get_vocab()
    table = [True] * len(tokenizer)
    if isinstance(model, models.WordPiece):
        prefix = model.continuing_subword_prefix
        for token, index in vocab.items():
            table[index] = not token.startswith(prefix)
    elif isinstance(model, (models.BPE, models.Unigram)):
        marker = "Ġ" if isinstance(backend.pre_tokenizer, pre_tokenizers.ByteLevel) else "▁"
        for token, index in vocab.items():
            table[index] = token.startswith(marker)
    else:
        raise ValueError(f"no word-boundary rule for tokenizer model {type(model).__name__}")
    for index in tokenizer.all_special_ids:
        table[index] = True
    return table
