"""Task data built from real text where no labelled set is reachable offline.

There is no SQuAD or sentence-pair (NSP/MRPC-like) data on the package registries, so these two
sets are made from the real paragraphs of the Wikipedia extract and Jane Austen's novels. They
exercise the QA and pair-classification heads end to end on real language; they are *not*
SQuAD or GLUE and their scores are not comparable with published numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import datasets
import numpy as np

from .labelled import split_indices
from .named_corpora import corpus_documents
from .sentences import sentence_spans

QA_CORPORA = {"wikipedia": 1_600, "austen": 1_400}  # answerable questions drawn from each corpus
QA_MIN_CONTEXT_CHARACTERS = 300
QA_LONG_CONTEXT_CHARACTERS = 1_700  # about 384+ word pieces: always included, so doc stride matters
QUESTION_WINDOW_WORDS = 15  # words of the source sentence kept on each side of the blank
PAIR_CORPORA = {"wikipedia": 2_500, "austen": 2_500}  # sentence pairs drawn from each corpus
PAIR_MIN_WORDS = 3

_HONORIFICS = frozenset(
    "mr mr. mrs mrs. miss ms ms. lady sir lord colonel col. captain capt. dr dr. doctor general gen. "
    "admiral king queen prince princess president governor senator".split()
)
# Capitalised mid-sentence after an opening quote, yet not names: never a single-word answer.
_FUNCTION_WORDS = frozenset(
    "a an the he she it they we you i his her its their our your my me him them us this that these those "
    "there here what who whom which when where why how but and or nor so yet if oh yes no well sir madam "
    "dear mr mrs miss".split()
)
_CONNECTORS = frozenset(["of", "de", "la", "le", "von", "van", "der", "du"])  # not "and": "Jane and Elizabeth" is two
_WORD = re.compile(r"\S+")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_EDGE_PUNCTUATION = "\"'“”‘’()[]{},;:.!?"


@dataclass(frozen=True)
class _Span:
    start: int  # character offsets of the answer in the sentence
    end: int
    wh_word: str
    blank_end: int  # end of the text the wh-word replaces (past a possessive "'s")


def _strip_edges(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so it neither starts nor ends with punctuation or quotes."""
    while start < end and text[start] in _EDGE_PUNCTUATION:
        start += 1
    while end > start and text[end - 1] in _EDGE_PUNCTUATION:
        if text[end - 1] == "." and text[start:end].lower() in _HONORIFICS:
            break
        end -= 1
    return start, end


def _answer_candidates(sentence: str) -> list[_Span]:
    """Blankable spans of a sentence: runs of capitalised words (not at the sentence start,
    lowercase connectors like "of" allowed inside) and numbers (years become "what year").
    """
    words: list[tuple[int, int]] = []
    # A word with punctuation around it ("(Melanospermae),") closes a phrase: no run crosses it.
    closes_phrase: list[bool] = []
    for match in _WORD.finditer(sentence):
        start, end = _strip_edges(sentence, match.start(), match.end())
        if end > start:
            words.append((start, end))
            closes_phrase.append(end != match.end())
            if start != match.start() and len(closes_phrase) > 1:
                closes_phrase[-2] = True
    candidates: list[_Span] = []
    index = 1  # the first word is capitalised because it starts the sentence: skip it
    while index < len(words):
        start, end = words[index]
        token = sentence[start:end]
        if _NUMBER.fullmatch(token) and len(token) >= 2:
            is_year = len(token) == 4 and token.isdigit() and 1000 <= int(token) <= 2100
            candidates.append(_Span(start, end, "what year" if is_year else "how many", end))
            index += 1
            continue
        if token[:1].isupper() and token not in ("I", "O") and len(token) > 1:
            last = index
            while last + 1 < len(words) and not closes_phrase[last]:
                following = sentence[words[last + 1][0] : words[last + 1][1]]
                if following[:1].isupper():
                    last += 1
                elif (
                    following in _CONNECTORS
                    and not closes_phrase[last + 1]
                    and last + 2 < len(words)
                    and sentence[words[last + 2][0]].isupper()
                ):
                    last += 2
                else:
                    break
            phrase_end = words[last][1]
            # Stop at a phrase-internal comma/semicolon ("Paris, France" is two candidates).
            cut = re.search(r"[,;:]", sentence[start:phrase_end])
            if cut:
                phrase_end = start + cut.start()
            wh_word = "who" if token.lower() in _HONORIFICS else "what"
            answer_end = phrase_end
            if sentence[start:phrase_end].endswith(("'s", "’s")):  # "Elizabeth's sister" → "whose sister"
                answer_end, wh_word = phrase_end - 2, "whose"
            if (last > index or token.lower() not in _FUNCTION_WORDS) and answer_end > start:
                candidates.append(_Span(start, answer_end, wh_word, phrase_end))
            index = last + 1
            continue
        index += 1
    return candidates


def _cloze_question(sentence: str, span: _Span) -> str:
    """The sentence around the span, span replaced by its wh-word, ending with '?'."""
    words_before = list(_WORD.finditer(sentence[: span.start]))[-QUESTION_WINDOW_WORDS:]
    words_after = list(_WORD.finditer(sentence, span.blank_end))[:QUESTION_WINDOW_WORDS]
    window_start = words_before[0].start() if words_before else span.start
    window_end = words_after[-1].end() if words_after else span.blank_end
    question = sentence[window_start : span.start] + span.wh_word + sentence[span.blank_end : window_end]
    question = question.rstrip(_EDGE_PUNCTUATION + " ")
    return question[:1].upper() + question[1:] + "?"


@dataclass(frozen=True)
class _Question:
    question: str
    answer: str
    answer_start: int  # in the context


def _make_question(context: str, generator: np.random.Generator) -> _Question | None:
    """One cloze question from a random sentence of ``context`` that has a blankable span."""
    spans = sentence_spans(context)
    for sentence_index in generator.permutation(len(spans)):
        sentence_start, sentence_end = spans[sentence_index]
        sentence = context[sentence_start:sentence_end]
        candidates = _answer_candidates(sentence)
        if not candidates:
            continue
        span = candidates[int(generator.integers(len(candidates)))]
        answer = sentence[span.start : span.end]
        return _Question(_cloze_question(sentence, span), answer, sentence_start + span.start)
    return None


@lru_cache(maxsize=None)
def _eligible_contexts(corpus: str) -> tuple[tuple[int, str, str], ...]:
    """(document index, title, paragraph) for paragraphs of two or more sentences, >= 300 chars."""
    return tuple(
        (document_index, document.title, paragraph)
        for document_index, document in enumerate(corpus_documents(corpus))
        for paragraph in document.paragraphs
        if len(paragraph) >= QA_MIN_CONTEXT_CHARACTERS and len(sentence_spans(paragraph)) >= 2
    )


def _choose_contexts(
    contexts: tuple[tuple[int, str, str], ...], count: int, generator: np.random.Generator
) -> list[int]:
    """All long contexts, then a random sample of the others up to ``count`` (sorted)."""
    long_ones = [i for i, (_, _, text) in enumerate(contexts) if len(text) >= QA_LONG_CONTEXT_CHARACTERS]
    others = np.array([i for i, (_, _, text) in enumerate(contexts) if len(text) < QA_LONG_CONTEXT_CHARACTERS])
    sampled = generator.choice(others, size=min(len(others), max(0, count - len(long_ones))), replace=False)
    return sorted(long_ones + sampled.tolist())


def load_real_text_qa(seed: int = 42, unanswerable_fraction: float = 1 / 3) -> datasets.DatasetDict:
    """Extractive cloze questions over real paragraphs, in the SQuAD v2 schema.

    How it is built (deterministic given ``seed``):

    1. Contexts are real paragraphs of at least 300 characters and two sentences: 1,600 from the
       Wikipedia extract (gensim 4.4.0) and 1,400 from Jane Austen's novels, every paragraph of
       1,700+ characters (about 384+ word pieces, so doc stride matters) included, the rest
       sampled at random.
    2. Answerable question: a random sentence of the context (regex sentence splitter) that has a
       blankable span -- a run of capitalised words not at the sentence start (e.g. "Mr. Bingley",
       "New South Wales") or a number. The span is replaced by a wh-word ("who" after an
       honorific, "whose" for a possessive "X's" (the answer is X), "what year" for a year,
       "how many" for another number, otherwise "what"), the
       sentence is cut to 15 words either side of the blank and ends with "?". The answer is the
       span, ``answer_start`` its character offset in the context (the occurrence in that
       sentence).
    3. Unanswerable questions (``unanswerable_fraction`` of all questions, default 1/3): a
       question generated in the same way from a paragraph of a *different* document of the same
       corpus, asked against this context, kept only if its answer string does not occur in the
       context (case-insensitive); ``answers`` is then empty.
    4. Split train/validation/test 80/10/10 by document (an article or a chapter), so no context
       is shared between splits.

    Columns: ``id`` (str), ``title``, ``context``, ``question``,
    ``answers`` = {"text": [str], "answer_start": [int]} (empty lists when unanswerable).
    The questions are synthetic (cloze), the contexts and answers real text: scores on this set
    are not comparable with SQuAD.
    """
    if not 0 <= unanswerable_fraction < 1:
        raise ValueError(f"unanswerable_fraction must be in [0, 1), got {unanswerable_fraction}")
    generator = np.random.default_rng(seed)
    rows: list[dict] = []
    document_keys: list[str] = []
    for corpus, count in QA_CORPORA.items():
        contexts = _eligible_contexts(corpus)
        chosen = _choose_contexts(contexts, count, generator)
        answerable: list[tuple[int, _Question]] = []
        for context_index in chosen:
            question = _make_question(contexts[context_index][2], generator)
            if question is not None:
                answerable.append((context_index, question))
        for context_index, question in answerable:
            document_index, title, context = contexts[context_index]
            rows.append(_qa_row(f"{corpus}-{context_index}-a", title, context, question))
            document_keys.append(f"{corpus}-{document_index}")
        wanted = int(round(len(answerable) * unanswerable_fraction / (1 - unanswerable_fraction)))
        for position in generator.permutation(len(answerable))[:wanted]:
            context_index = answerable[position][0]
            document_index, title, context = contexts[context_index]
            donor = _foreign_question(answerable, contexts, document_index, context, generator)
            rows.append(_qa_row(f"{corpus}-{context_index}-u", title, context, _Question(donor.question, "", -1)))
            document_keys.append(f"{corpus}-{document_index}")
        if wanted > len(answerable):
            raise RuntimeError(f"{corpus}: {wanted} unanswerable questions wanted, only {len(answerable)} contexts")
    _validate_qa_rows(rows)
    return _split_by_document(rows, document_keys, _QA_FEATURES, seed)


def _foreign_question(
    answerable: list[tuple[int, _Question]],
    contexts: tuple[tuple[int, str, str], ...],
    document_index: int,
    context: str,
    generator: np.random.Generator,
) -> _Question:
    """A question from another document whose answer string does not occur in ``context``."""
    for _ in range(100):
        donor_index, donor = answerable[int(generator.integers(len(answerable)))]
        if contexts[donor_index][0] != document_index and donor.answer.lower() not in context.lower():
            return donor
    raise RuntimeError("found no question from another document whose answer is absent from this context")


_QA_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "title": datasets.Value("string"),
        "context": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answers": {
            "text": datasets.Sequence(datasets.Value("string")),
            "answer_start": datasets.Sequence(datasets.Value("int32")),
        },
    }
)


def _qa_row(example_id: str, title: str, context: str, question: _Question) -> dict:
    answers = (
        {"text": [question.answer], "answer_start": [question.answer_start]}
        if question.answer
        else {"text": [], "answer_start": []}
    )
    return {"id": example_id, "title": title, "context": context, "question": question.question, "answers": answers}


def _validate_qa_rows(rows: list[dict]) -> None:
    """Every answer is the context text at its offset; every unanswerable one truly is."""
    for row in rows:
        texts, starts = row["answers"]["text"], row["answers"]["answer_start"]
        for text, start in zip(texts, starts):
            if not text or row["context"][start : start + len(text)] != text:
                raise RuntimeError(f"QA row {row['id']}: answer {text!r} is not at offset {start} of its context")


def _split_by_document(
    rows: list[dict], document_keys: list[str], features: datasets.Features, seed: int
) -> datasets.DatasetDict:
    """80/10/10 split of the documents (stratified by corpus); each row follows its document."""
    unique_keys = sorted(set(document_keys))
    corpus_of_key = [key.rsplit("-", 1)[0] for key in unique_keys]
    corpora = sorted(set(corpus_of_key))
    strata = [corpora.index(corpus) for corpus in corpus_of_key]
    split_of_key = {
        unique_keys[index]: split
        for split, indices in split_indices(len(unique_keys), seed, strata).items()
        for index in indices
    }
    # Rows in a seeded shuffled order: the first N rows are a representative subset.
    order = np.random.default_rng(seed).permutation(len(rows))
    parts = {}
    for split in ("train", "validation", "test"):
        selected = [rows[i] for i in order if split_of_key[document_keys[i]] == split]
        parts[split] = datasets.Dataset.from_list(selected, features=features)
    return datasets.DatasetDict(parts)


def load_sentence_pairs(seed: int = 42) -> datasets.DatasetDict:
    """Next-sentence classification pairs from real text (Wikipedia extract and Austen's novels).

    How it is built (deterministic given ``seed``): split every paragraph into sentences (regex
    splitter) and list all pairs of consecutive sentences of the same paragraph, both with at
    least 3 words. Draw 2,500 such pairs from each corpus at random. For a random half of them
    (balanced: exactly half per corpus) ``sentence2`` is replaced by a random sentence (3+
    words) from a *different* document of the same corpus (label ``not_next``); the others keep
    the true following sentence (label ``next``). Split train/validation/test 80/10/10 by the
    document ``sentence1`` comes from.

    Columns: ``id`` (int), ``sentence1``, ``sentence2``, ``label`` (ClassLabel ["not_next", "next"]).
    """
    generator = np.random.default_rng(seed)
    rows: list[dict] = []
    document_keys: list[str] = []
    for corpus, count in PAIR_CORPORA.items():
        consecutive: list[tuple[int, str, str]] = []
        sentences_by_document: list[list[str]] = []
        for document_index, document in enumerate(corpus_documents(corpus)):
            document_sentences: list[str] = []
            for paragraph in document.paragraphs:
                sentences = [paragraph[s:e] for s, e in sentence_spans(paragraph)]
                sentences = [s if len(s.split()) >= PAIR_MIN_WORDS else None for s in sentences]
                consecutive.extend(
                    (document_index, first, second)
                    for first, second in zip(sentences, sentences[1:])
                    if first and second
                )
                document_sentences.extend(s for s in sentences if s)
            sentences_by_document.append(document_sentences)
        if len(consecutive) < count:
            raise RuntimeError(f"{corpus}: only {len(consecutive)} consecutive sentence pairs, need {count}")
        chosen = generator.choice(len(consecutive), size=count, replace=False)
        negative = set(generator.permutation(count)[: count // 2].tolist())
        for position, pair_index in enumerate(chosen):
            document_index, first, second = consecutive[pair_index]
            label = 1
            if position in negative:
                other_documents = [
                    i for i in range(len(sentences_by_document)) if i != document_index and sentences_by_document[i]
                ]
                other = sentences_by_document[other_documents[int(generator.integers(len(other_documents)))]]
                second, label = other[int(generator.integers(len(other)))], 0
            rows.append({"id": len(rows), "sentence1": first, "sentence2": second, "label": label})
            document_keys.append(f"{corpus}-{document_index}")
    features = datasets.Features(
        {
            "id": datasets.Value("int64"),
            "sentence1": datasets.Value("string"),
            "sentence2": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["not_next", "next"]),
        }
    )
    return _split_by_document(rows, document_keys, features, seed)
