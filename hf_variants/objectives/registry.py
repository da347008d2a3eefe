"""The pretraining objectives, one declared entry each: what `examples/run_pretraining.py` (and any
other trainer) needs to know to train with it.

An `Objective` names its collator factory, the rate it masks or predicts at (and the collator option
that takes it), whether a sentence task (NSP / SOP) can go with it, whether it needs its own
pretraining head, and whether it builds rows of its own shape (TLM's translation pairs, T5's
raw-token rows) instead of one of the packed input formats of `packing.py`. Adding an objective is
one `register_objective(Objective(...))` call; run_pretraining reads nothing else.

    objective, sentence_task = parse_objective("ngram+sop")
    collator = objective.make_collator(tokenizer, rate=0.15, model_config=config)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import datasets

from .mlm import DataCollatorForMaskedLM
from .plm import DataCollatorForPermutationLM
from .rtd import DataCollatorForReplacedTokenDetection
from .span_corruption import DataCollatorForSpanCorruption, span_corruption_dataset
from .spans import DataCollatorForNgramMasking, DataCollatorForSpanMasking
from .tlm import DataCollatorForTranslationLM, tlm_dataset

SENTENCE_TASKS = ("nsp", "sop")  # BERT's next-sentence prediction, ALBERT's sentence-order prediction
PAIR_FORMATS = ("segment-pair", "sentence-pair")

# (text rows, tokenizer, max_length, model config) -> examples
RowBuilder = Callable[[datasets.Dataset, Any, int, Any], datasets.Dataset]


@dataclass(frozen=True)
class Objective:
    """One pretraining objective.

    Attributes:
        name: the `--objective` name ("mlm", "span", ...), before any "+nsp" / "+sop".
        collator: factory `(tokenizer, **options) -> collator`; the collator maps a list of rows to a
            batch of tensors (input_ids (batch, length), labels (batch, length), ...).
        summary: one line for help texts and errors.
        rate_option: the collator option that takes the masking / prediction rate.
        paper_rate: the paper's rate (BERT 15%; XLNet predicts 1/K of the tokens, K = 6), used when
            neither the command line nor the model config (`config.<rate_option>`) gives one.
        sentence_tasks: the sentence tasks that may be added ("mlm+nsp"); empty for none.
        own_pretraining_head: trains through `AutoModelForPreTraining` even without a sentence task
            (ELECTRA's generator + discriminator, XLNet's two-stream model).
        rows: builds the objective's own rows from the text (TLM's pairs, T5's raw-token rows); None
            for the shared packed input formats (`packing.INPUT_FORMATS`).
        parallel: needs a parallel corpus (rows with a `translation` dict).
        whole_word_option: accepts `whole_word_mask=True`.
        config_options: collator option -> model config attribute passed when the config has it
            (SpanBERT: the SBO position table's size bounds the span boundary offsets).
    """

    name: str
    collator: Callable[..., Any]
    summary: str
    rate_option: str = "mlm_probability"
    paper_rate: float = 0.15
    sentence_tasks: tuple[str, ...] = SENTENCE_TASKS
    own_pretraining_head: bool = False
    rows: RowBuilder | None = None
    parallel: bool = False
    whole_word_option: bool = False
    config_options: dict[str, str] = field(default_factory=dict)

    @property
    def static_masking(self) -> bool:
        """Whether masks can be drawn once and stored (`--masking static`): plain token masking of
        the packed formats only; the others draw their targets per batch."""
        return not self.own_pretraining_head and self.rows is None

    def input_format(self, requested: str | None, sentence_task: str | None) -> str:
        """The input format: `requested`, else segment-pair with a sentence task and full-sentences
        without; objectives with rows of their own refuse a requested format."""
        if self.rows is not None:
            if requested:
                raise ValueError(f"--input_format does not apply to objective {self.name!r}: it builds its own rows")
            return f"{self.name} rows"
        input_format = requested or ("segment-pair" if sentence_task else "full-sentences")
        if (input_format in PAIR_FORMATS) != bool(sentence_task):
            raise ValueError(
                f"--input_format {input_format} does not fit objective "
                f"{'+'.join(filter(None, [self.name, sentence_task]))!r}: pair formats go with "
                "+nsp/+sop, full-sentences/doc-sentences with plain masking"
            )
        return input_format

    def rate(self, requested: float | None, config=None) -> float:
        """The masking / prediction rate: `requested`, else the config's, else the paper's."""
        return requested or getattr(config, self.rate_option, None) or self.paper_rate

    def collator_options(self, rate: float, whole_word_mask: bool = False, model_config=None) -> dict[str, Any]:
        """Keyword arguments for `collator` (without the tokenizer)."""
        options: dict[str, Any] = {}
        if whole_word_mask and self.whole_word_option:
            options["whole_word_mask"] = True
        for option, attribute in self.config_options.items():
            if hasattr(model_config, attribute):
                options[option] = getattr(model_config, attribute)
        options[self.rate_option] = rate
        return options

    def make_collator(
        self, tokenizer, rate: float | None = None, whole_word_mask: bool = False, model_config=None, **extra
    ):
        """A collator for this objective (`extra`: e.g. `seed`)."""
        options = self.collator_options(self.rate(rate, model_config), whole_word_mask, model_config)
        return self.collator(tokenizer, **options, **extra)


OBJECTIVES: dict[str, Objective] = {}


def register_objective(objective: Objective) -> Objective:
    """Add `objective` under its name (a name already taken is a ValueError)."""
    if objective.name in OBJECTIVES:
        raise ValueError(f"objective {objective.name!r} is already registered")
    if "+" in objective.name:
        raise ValueError(f"objective name {objective.name!r}: '+' separates the sentence task")
    unknown = set(objective.sentence_tasks) - set(SENTENCE_TASKS)
    if unknown:
        raise ValueError(f"objective {objective.name!r}: unknown sentence tasks {sorted(unknown)}")
    OBJECTIVES[objective.name] = objective
    return objective


def parse_objective(text: str) -> tuple[Objective, str | None]:
    """ "ngram+sop" -> (the ngram Objective, "sop"); an unknown name or a sentence task the objective
    does not take is a ValueError naming both."""
    name, _, sentence_task = text.partition("+")
    if name not in OBJECTIVES or (sentence_task and sentence_task not in SENTENCE_TASKS):
        with_tasks = [n for n, o in OBJECTIVES.items() if o.sentence_tasks]
        alone = [n for n, o in OBJECTIVES.items() if not o.sentence_tasks]
        raise ValueError(
            f"unknown objective {text!r}: use {', '.join(with_tasks)}, optionally "
            f"+{' or +'.join(SENTENCE_TASKS)}, or {', '.join(alone)}"
        )
    objective = OBJECTIVES[name]
    if sentence_task and sentence_task not in objective.sentence_tasks:
        raise ValueError(f"objective {text!r}: {name} ({objective.summary}) has no sentence task")
    return objective, sentence_task or None


def _tlm_rows(pairs: datasets.Dataset, tokenizer, max_length: int, config) -> datasets.Dataset:
    """XLM's TLM rows: each pair concatenated, positions restarting, language ids per half from
    `config.lang2id` (the pair's two languages, in the order of the translation dicts)."""
    first, second = pairs[0]["translation"]
    return tlm_dataset(pairs, tokenizer, first, second, config.lang2id, max_length)


def _span_corruption_rows(text: datasets.Dataset, tokenizer, max_length: int, config) -> datasets.Dataset:
    """T5: raw-token rows sized so the corrupted input is max_length tokens (random_spans_helper)."""
    return span_corruption_dataset(text, tokenizer, max_length)


def _span_corruption_collator(tokenizer, noise_density: float = 0.15, seed: int | None = None):
    """T5's objective: `noise_density` (15%) of the tokens dropped, in spans of mean length 3."""
    return DataCollatorForSpanCorruption(tokenizer, noise_density=noise_density, seed=seed)


register_objective(Objective("mlm", DataCollatorForMaskedLM, "BERT / RoBERTa masked LM", whole_word_option=True))
register_objective(
    Objective(
        "span",
        DataCollatorForSpanMasking,
        "SpanBERT's geometric spans",
        config_options={"max_sbo_offset": "max_span_length"},
    )
)
register_objective(Objective("ngram", DataCollatorForNgramMasking, "ALBERT's n-gram masking"))
register_objective(
    Objective(
        "rtd",
        DataCollatorForReplacedTokenDetection,
        "ELECTRA's replaced token detection",
        sentence_tasks=(),
        own_pretraining_head=True,
    )
)
register_objective(
    Objective(
        "plm",
        DataCollatorForPermutationLM,
        "XLNet's permutation LM",
        rate_option="plm_probability",
        paper_rate=1 / 6,
        sentence_tasks=(),
        own_pretraining_head=True,
    )
)
register_objective(
    Objective(
        "tlm", DataCollatorForTranslationLM, "XLM's translation LM", sentence_tasks=(), rows=_tlm_rows, parallel=True
    )
)
# run_pretraining's --mlm_probability is T5's noise density; the config has no such field.
register_objective(
    Objective(
        "span-corruption",
        _span_corruption_collator,
        "T5's span corruption",
        rate_option="noise_density",
        sentence_tasks=(),
        rows=_span_corruption_rows,
    )
)
