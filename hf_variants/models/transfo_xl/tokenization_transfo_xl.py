"""Transformer-XL's word-level vocabulary, as a `tokenizers` WordLevel model.

The original code (and transformers' removed TransfoXLTokenizer) split on whitespace, counted
words, kept those above a frequency threshold, mapped the rest to ``<unk>`` and ended each line
with ``<eos>``; transformers pickled the result. Here the vocabulary lives in ``tokenizer.json``
(plain JSON, loadable with ``PreTrainedTokenizerFast.from_pretrained`` / ``AutoTokenizer``).
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

UNKNOWN, END_OF_LINE = "<unk>", "<eos>"


def _with_word_level_conventions(backend: Tokenizer, lowercase: bool) -> PreTrainedTokenizerFast:
    """Whitespace words, optional lower-casing, ``<eos>`` appended to every encoded line."""
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if lowercase:
        backend.normalizer = normalizers.Lowercase()
    backend.post_processor = processors.TemplateProcessing(
        single=f"$A {END_OF_LINE}", special_tokens=[(END_OF_LINE, backend.token_to_id(END_OF_LINE))]
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token=UNKNOWN, eos_token=END_OF_LINE)


def word_level_tokenizer(
    lines: Iterable[str], vocab_size: int | None = None, min_frequency: int = 1, lowercase: bool = False
) -> PreTrainedTokenizerFast:
    """Build the vocabulary from ``lines``: whitespace-separated words seen at least ``min_frequency``
    times (the ``vocab_size`` most frequent, if given), ``<unk>`` for the rest, ``<eos>`` appended
    to every encoded line (the original's ``add_eos``)."""
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
    backend = Tokenizer(models.WordLevel(unk_token=UNKNOWN))
    if lowercase:
        backend.normalizer = normalizers.Lowercase()  # the counts are of lower-cased words
    trainer = trainers.WordLevelTrainer(
        vocab_size=vocab_size or 1 << 30, min_frequency=min_frequency, special_tokens=[UNKNOWN, END_OF_LINE]
    )
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.train_from_iterator(lines, trainer=trainer)
    return _with_word_level_conventions(backend, lowercase)


def tokenizer_from_symbols(symbols: list[str], lowercase: bool = False) -> PreTrainedTokenizerFast:
    """A fixed vocabulary (``symbols[i]`` has id i, the old TransfoXLTokenizer's ``idx2sym``) as a
    WordLevel tokenizer; it must hold ``<unk>`` and ``<eos>``."""
    if len(set(symbols)) != len(symbols):
        raise ValueError("the vocabulary lists a symbol twice")
    missing = [s for s in (UNKNOWN, END_OF_LINE) if s not in symbols]
    if missing:
        raise ValueError(f"the vocabulary has no {missing}: Transformer-XL's word vocabulary needs <unk> and <eos>")
    vocabulary = {symbol: index for index, symbol in enumerate(symbols)}
    return _with_word_level_conventions(Tokenizer(models.WordLevel(vocab=vocabulary, unk_token=UNKNOWN)), lowercase)
