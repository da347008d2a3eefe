"""Name-based access for the example scripts (``--dataset_name hf_variants/...``) and column checks."""

from __future__ import annotations

from collections.abc import Callable

import datasets

from .images import load_digits, load_fashion_mnist
from .labelled import load_rt_polarity, load_wnut16, load_wsj_pos
from .pretraining_corpus import load_pretraining_corpus
from .pronunciation import load_cmudict
from .text_tasks import load_real_text_qa, load_sentence_pairs
from .transfer import load_movie_review_transfer_set

_LOADERS: dict[str, tuple[Callable[..., datasets.DatasetDict], tuple[str, ...]]] = {
    # name: (loader, accepted config names; the first one is the default)
    "hf_variants/rt_polarity": (lambda config: load_rt_polarity(granularity=config), ("binary", "fine")),
    # distillation's transfer set: rt-polarity train sentences + Pang & Lee review sentences (transfer.py);
    # the "+imdb" configs add the IMDB train reviews' sentences
    "hf_variants/rt_transfer": (
        lambda config: load_movie_review_transfer_set(
            keep_labels=config.startswith("labelled"), include_imdb=config.endswith("+imdb")
        ),
        ("labelled", "unlabeled", "labelled+imdb", "unlabeled+imdb"),
    ),
    "hf_variants/wnut16": (lambda config: load_wnut16(), ()),
    "hf_variants/wsj_pos": (lambda config: load_wsj_pos(), ()),
    "hf_variants/real_text_qa": (lambda config: load_real_text_qa(), ()),
    "hf_variants/sentence_pairs": (lambda config: load_sentence_pairs(), ()),
    "hf_variants/fashion_mnist": (lambda config: load_fashion_mnist(), ()),
    "hf_variants/digits": (lambda config: load_digits(), ()),
    "hf_variants/cmudict": (lambda config: load_cmudict(), ()),
    # ~10 M words: Debian documentation cleaned to prose + Austen, Wikipedia, Lee (docs/corpus.md)
    "hf_variants/pretraining_corpus": (lambda config: load_pretraining_corpus(), ()),
}
DATASET_NAMES = tuple(_LOADERS)


def load_named_dataset(name: str, config_name: str | None = None) -> datasets.DatasetDict:
    """Load one of the offline data sets by name, e.g. ``load_named_dataset("hf_variants/rt_polarity", "fine")``.

    Names: ``hf_variants/rt_polarity`` (configs ``binary`` (default), ``fine``),
    ``hf_variants/rt_transfer`` (distillation's transfer set, one ``train`` split; configs
    ``labelled`` (default: the rt-polarity train rows keep their labels), ``unlabeled``, and the same
    two with the IMDB train reviews' sentences added: ``labelled+imdb``, ``unlabeled+imdb``),
    ``hf_variants/wnut16``, ``hf_variants/wsj_pos``, ``hf_variants/real_text_qa``,
    ``hf_variants/sentence_pairs``, ``hf_variants/fashion_mnist``, ``hf_variants/digits`` (images),
    ``hf_variants/cmudict`` (grapheme-to-phoneme pairs), ``hf_variants/pretraining_corpus`` (one document
    per row, ``text`` and ``source``; built on first use, see docs/corpus.md).
    Any other name raises ``ValueError`` (scripts then fall back to ``datasets.load_dataset`` for
    Hub names).
    """
    if name not in _LOADERS:
        raise ValueError(f"unknown hf_variants dataset {name!r}; known names: {', '.join(DATASET_NAMES)}")
    loader, configs = _LOADERS[name]
    if config_name is None:
        config_name = configs[0] if configs else None
    elif config_name not in configs:
        accepted = ", ".join(configs) if configs else "none (pass config_name=None)"
        raise ValueError(f"dataset {name!r} has no config {config_name!r}; accepted configs: {accepted}")
    return loader(config_name)


def check_columns(dataset: datasets.Dataset | datasets.DatasetDict, required: list[str], purpose: str) -> None:
    """Raise ``ValueError`` naming the missing columns, the columns found and the ones expected.

    For a ``DatasetDict`` every split is checked.
    """
    splits = dataset.items() if isinstance(dataset, datasets.DatasetDict) else [(None, dataset)]
    for split, part in splits:
        found = list(part.column_names)
        missing = [column for column in required if column not in found]
        if missing:
            where = f" (split {split!r})" if split is not None else ""
            raise ValueError(
                f"{purpose} needs columns {required}, but the dataset{where} has {found}; missing: {missing}"
            )
