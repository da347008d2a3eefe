"""Pretrain an hf-variants model on real text with its paper's objective, using Trainer.

    python examples/run_pretraining.py --model_name_or_path bert-mini --corpus austen \\
        --output_dir outputs/bert-mini-austen --max_steps 2000 --per_device_train_batch_size 32

An encoder-decoder trains as AutoModelForSeq2SeqLM: `--model_name_or_path t5-mini` takes T5's span
corruption (15% noise in spans of mean length 3; `--max_seq_length` is the corrupted input's length)
and a T5 Unigram tokenizer with sentinels; the validation "mlm_*" numbers are then the loss and
accuracy on the target tokens (sentinels, dropped tokens, EOS).

`--model_name_or_path` is a named flavour in `modeling_configs/` (trained from scratch) or a
checkpoint folder (training continues from its weights). The objective defaults to the model's
paper (BERT: mlm+nsp); the tokenizer is `--tokenizer_name` or one trained on the training text
(`--tokenizer_kind`, `--vocab_size`). Text comes from `--corpus austen|wikipedia|lee|multilingual`
(`hf_variants.data`) or `--train_file` (one paragraph per line, an empty line between
documents: BERT's format). XLM's translation LM (`--objective tlm`) reads a parallel corpus
instead: `--corpus django-en-fr` (real English-French pairs, `hf_variants.data.load_django_translations`).
`--dataset_name` (with `--dataset_config_name`) reads a Hub dataset or a local dataset folder instead:
translation rows for tlm (opus_books, wmt16), a `text` column otherwise (wikitext). The last `--validation_fraction` of the documents is held out; MLM
accuracy and perplexity on it (fixed masks) are reported before and after training in
`eval_results.json`.

The schedule is BERT's: AdamW, weight decay 0.01, linear warmup (`--warmup_steps`, an int or a
ratio) then linear decay. `--phase2_fraction 0.1 --phase2_max_seq_length 512` trains the last
10% of the steps on longer sequences, as BERT did. Every TrainingArguments option works
(`--save_steps`, `--resume_from_checkpoint`, `--bf16`, ...); launch with `accelerate launch` for
several devices. The output folder holds `model.safetensors`, `config.json` and the tokenizer,
loadable with `AutoModelForSequenceClassification.from_pretrained` after `import hf_variants`.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import inspect
import json
import logging
import math
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import datasets  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import (AutoConfig, AutoModelForMaskedLM, AutoModelForPreTraining,  # noqa: E402
                          AutoModelForSeq2SeqLM, AutoTokenizer, HfArgumentParser, TrainingArguments, set_seed)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a source checkout

import hf_variants  # noqa: E402  (registers the hf-variants model types with the Auto classes)
from hf_variants.atomic import save_atomically, write_text_atomically  # noqa: E402
from hf_variants.configs import is_named_config, named_config  # noqa: E402
from hf_variants.hub.trainer import CheckpointSafeTrainer, check_optimizer_arguments  # noqa: E402
from hf_variants.hub.checkpoints import last_complete_checkpoint, resolve_checkpoint  # noqa: E402
from hf_variants.registry import spec_for  # noqa: E402
from hf_variants.data import load_corpus, load_django_translations  # noqa: E402
from hf_variants.data.data_files import read_utf8_text  # noqa: E402
from hf_variants.objectives import (INPUT_FORMATS, DataCollatorForMaskedLM,  # noqa: E402
                                    DataCollatorForNgramMasking, DataCollatorForPrecomputedMasks,
                                    DataCollatorForReplacedTokenDetection, DataCollatorForSpanMasking,
                                    DataCollatorForTranslationLM, make_static_masked_dataset,
                                    pretraining_dataset, tlm_dataset)
from hf_variants.objectives import DataCollatorForPermutationLM  # noqa: E402
from hf_variants.objectives import DataCollatorForSpanCorruption, span_corruption_dataset  # noqa: E402
from hf_variants.objectives.masking import SeededRNG  # noqa: E402
from hf_variants.tokenization import TOKENIZER_KINDS, train_tokenizer  # noqa: E402

logger = logging.getLogger("run_pretraining")


def span_corruption_collator(tokenizer, mlm_probability: float, seed: int | None = None) -> DataCollatorForSpanCorruption:
    """T5's objective: `mlm_probability` is the noise density (15%), in spans of mean length 3."""
    return DataCollatorForSpanCorruption(tokenizer, noise_density=mlm_probability, seed=seed)


MASKING_SCHEMES = {"mlm": DataCollatorForMaskedLM, "span": DataCollatorForSpanMasking,
                   "ngram": DataCollatorForNgramMasking, "rtd": DataCollatorForReplacedTokenDetection,
                   "plm": DataCollatorForPermutationLM, "tlm": DataCollatorForTranslationLM,
                   "span-corruption": span_corruption_collator}
# Schemes with a pretraining head of their own (AutoModelForPreTraining) and no sentence task:
# ELECTRA's generator + discriminator, XLNet's two-stream permutation LM.
STANDALONE_SCHEMES = ("rtd", "plm")
# Schemes whose collator names its rate otherwise, with the paper's rate: XLNet predicts 1/K of
# the tokens, K = 6 (the content stream is never corrupted, so there is no mask rate).
PREDICTION_RATES = {"plm": ("plm_probability", 1 / 6)}
SENTENCE_TASKS = ("nsp", "sop")
# Parallel corpora (rows with a `translation` dict, the Hub's format) for the objectives that need one.
PARALLEL_CORPORA = {"django-en-fr": load_django_translations}


def tlm_examples(pairs: datasets.Dataset, tokenizer, max_length: int, config) -> datasets.Dataset:
    """XLM's TLM rows: each pair concatenated, positions restarting, language ids per half from
    `config.lang2id` (the pair's two languages, in the order of the translation dicts)."""
    first, second = pairs[0]["translation"]
    return tlm_dataset(pairs, tokenizer, first, second, config.lang2id, max_length)


# Objectives whose rows are not one of `pretraining_dataset`'s input formats: objective ->
# (text, tokenizer, max_length, config) -> rows. Their masks are drawn per batch (dynamic only).
OWN_EXAMPLE_BUILDERS = {
    "tlm": tlm_examples,
    # T5: raw-token rows sized so the corrupted input is max_length tokens (random_spans_helper).
    "span-corruption": lambda text, tokenizer, max_length, config: span_corruption_dataset(text, tokenizer, max_length),
}
PARALLEL_OBJECTIVES = ("tlm",)


@dataclass
class PretrainingArguments:
    model_name_or_path: str = field(default="bert-mini", metadata={
        "help": "a modeling_configs/ name (from scratch) or a checkpoint folder"})
    config_overrides: str | None = field(default=None, metadata={
        "help": "from scratch: override config fields, e.g. 'discriminator_weight=10,hidden_dropout_prob=0.0'"})
    objective: str | None = field(default=None, metadata={
        "help": "mlm | span | ngram, optionally +nsp or +sop (mlm+nsp, mlm+sop, ngram+sop), rtd (ELECTRA), "
                "plm (XLNet), tlm (XLM, with a parallel --corpus) or span-corruption (T5); default: the model's paper"})
    masking: str = field(default="dynamic", metadata={"help": "dynamic (RoBERTa) or static (BERT)"})
    static_copies: int = field(default=10, metadata={"help": "static masking: masked copies of the data (BERT: 10)"})
    whole_word_mask: bool = field(default=False, metadata={"help": "mlm: mask whole words"})
    mlm_probability: float | None = field(default=None, metadata={
        "help": "fraction of tokens masked (plm: predicted); default: the config's mlm_probability (ELECTRA-Large: "
                "0.25), else the paper's (0.15; plm: 1/6)"})
    input_format: str | None = field(default=None, metadata={
        "help": f"one of {INPUT_FORMATS}; default full-sentences, or segment-pair with nsp/sop"})
    tokenizer_name: str | None = field(default=None, metadata={"help": "a tokenizer folder; default: train one"})
    tokenizer_kind: str | None = field(default=None, metadata={"help": f"for training one: {TOKENIZER_KINDS}"})
    vocab_size: int = field(default=8000, metadata={"help": "for training a tokenizer"})
    corpus: str | None = field(default=None, metadata={
        "help": "austen | wikipedia | lee | multilingual (hf_variants.data), or django-en-fr (parallel, for tlm)"})
    train_file: str | None = field(default=None, metadata={"help": "text: a paragraph per line, blank line between documents"})
    dataset_name: str | None = field(default=None, metadata={
        "help": "a Hub dataset (or a local dataset folder) instead of --corpus: for tlm rows with a `translation` "
                "dict (e.g. opus_books, wmt16), else a `text` column, one paragraph per row (e.g. wikitext)"})
    dataset_config_name: str | None = field(default=None, metadata={"help": "its configuration, e.g. en-fr"})
    max_documents: int | None = field(default=None, metadata={"help": "use only the first N documents"})
    validation_fraction: float = field(default=0.05, metadata={"help": "documents held out for evaluation"})
    max_seq_length: int = field(default=128)
    phase2_fraction: float = field(default=0.0, metadata={"help": "fraction of steps at phase2_max_seq_length"})
    phase2_max_seq_length: int = field(default=512)
    short_seq_prob: float = field(default=0.1, metadata={"help": "pair formats: probability of a short target"})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "start over even if output_dir holds checkpoints (default: resume from the newest complete one)"})


def parse_objective(objective: str) -> tuple[str, str | None]:
    masking, _, sentence_task = objective.partition("+")
    if masking not in MASKING_SCHEMES or (sentence_task and sentence_task not in SENTENCE_TASKS):
        raise ValueError(f"unknown objective {objective!r}: use mlm, span or ngram, optionally +nsp or +sop, "
                         "or rtd, plm, tlm or span-corruption")
    if (masking in STANDALONE_SCHEMES or masking in OWN_EXAMPLE_BUILDERS) and sentence_task:
        raise ValueError(f"objective {objective!r}: {masking} (ELECTRA's replaced token detection, XLNet's "
                         "permutation LM, XLM's translation LM) has no sentence task")
    return masking, sentence_task or None


def read_text_file(path: str) -> datasets.Dataset:
    """BERT's pretraining text format -> rows (document, text). A missing or empty file, or a byte
    that is not UTF-8, is a ValueError naming the file (and line)."""
    try:
        text = read_utf8_text(path)
    except ValueError as error:
        raise ValueError(f"--train_file {error}") from None
    lines = text.splitlines()
    kept, documents = paragraph_documents(lines)
    return datasets.Dataset.from_dict({"document": documents, "text": [lines[index].strip() for index in kept]})


def paragraph_documents(paragraphs: Iterable[str | None]) -> tuple[list[int], list[int]]:
    """(indices of the non-blank paragraphs, the document id of each): one or more blank (or None)
    paragraphs close a document, as in BERT's pretraining text format and wikitext's rows."""
    kept, documents, document, blank_seen = [], [], 0, False
    for index, paragraph in enumerate(paragraphs):
        if not (paragraph or "").strip():
            blank_seen = bool(kept)
            continue
        if blank_seen:  # the first paragraph after blank ones opens a new document
            document, blank_seen = document + 1, False
        kept.append(index)
        documents.append(document)
    return kept, documents


def load_parallel_corpus(name: str) -> datasets.Dataset:
    """A parallel corpus with a `text` column added (both sides on one line, for training the tokenizer)."""
    pairs = PARALLEL_CORPORA[name]()
    return pairs.map(lambda row: {"text": "\n".join(row["translation"].values())})


def load_dataset_corpus(name: str, config_name: str | None, parallel: bool) -> datasets.Dataset:
    """The train split of a Hub dataset (or local dataset folder) as corpus rows.

    Parallel (tlm): rows with a `translation` dict, the same two languages in every row (the
    Hub's translation format: opus_books, wmt16, ...); each pair is its own document, and gets a
    `text` column (both sides) for training the tokenizer. Otherwise: a `text` column, one
    paragraph per row, an empty row closing a document (wikitext's layout)."""
    rows = datasets.load_dataset(name, config_name, split="train")
    column = "translation" if parallel else "text"
    if column not in rows.column_names:
        kind = "parallel rows (a `translation` dict per row) for tlm" if parallel else "a `text` column"
        raise ValueError(f"--dataset_name {name}: expected {kind}, the columns are {rows.column_names}")
    if parallel:
        languages = sorted(rows[0]["translation"])
        if len(languages) != 2:
            raise ValueError(f"--dataset_name {name}: row 0 translates between {languages}, tlm needs exactly two languages")

        def pair_row(row: dict, index: int) -> dict:
            if sorted(row["translation"]) != languages or not all(row["translation"].values()):
                raise ValueError(f"--dataset_name {name}: row {index} has {row['translation']!r}, expected {languages} texts")
            return {"text": "\n".join(row["translation"].values()), "document": index}

        return rows.map(pair_row, with_indices=True)
    kept, documents = paragraph_documents(rows["text"])
    if not kept:
        raise ValueError(f"--dataset_name {name}: the train split has no text")
    return rows.select(kept).select_columns(["text"]).add_column("document", documents)


def load_text(args: PretrainingArguments, minimum_documents: int,
              parallel: bool = False) -> tuple[datasets.Dataset, datasets.Dataset]:
    """The corpus split by document into (train, validation), each of >= `minimum_documents`.
    With `parallel`, the corpus must be one of PARALLEL_CORPORA or a dataset of translation rows."""
    # run_clm's arguments share this loader and have no --dataset_name.
    dataset_name = getattr(args, "dataset_name", None)
    sources = {"--corpus": args.corpus, "--train_file": args.train_file, "--dataset_name": dataset_name}
    if sum(source is not None for source in sources.values()) != 1:
        raise ValueError(f"give exactly one of {', '.join(name for name in sources if hasattr(args, name[2:]))}")
    if dataset_name is not None:
        corpus = load_dataset_corpus(dataset_name, args.dataset_config_name, parallel)
    elif parallel != (args.corpus in PARALLEL_CORPORA):
        raise ValueError(f"--corpus {args.corpus or args.train_file!r}: the objectives {PARALLEL_OBJECTIVES} need a "
                         f"parallel corpus ({', '.join(PARALLEL_CORPORA)}, or --dataset_name with translation rows) "
                         "and the others plain text")
    elif parallel:
        corpus = load_parallel_corpus(args.corpus)
    else:
        corpus = load_corpus(args.corpus) if args.corpus else read_text_file(args.train_file)
    document_ids = np.asarray(corpus["document"])
    unique = list(dict.fromkeys(document_ids.tolist()))
    if args.max_documents:
        unique = unique[:args.max_documents]
    if not 0 < args.validation_fraction < 1:
        raise ValueError(f"--validation_fraction must be in (0, 1), got {args.validation_fraction}")
    # NSP draws its random segments from other documents, so each side needs at least two.
    held_out = max(minimum_documents, round(len(unique) * args.validation_fraction))
    if len(unique) < held_out + minimum_documents:
        raise ValueError(f"need at least {held_out + minimum_documents} documents ({held_out} held out), "
                         f"the text has {len(unique)}")
    train_rows = np.flatnonzero(np.isin(document_ids, unique[:-held_out]))
    validation_rows = np.flatnonzero(np.isin(document_ids, unique[-held_out:]))
    return corpus.select(train_rows), corpus.select(validation_rows)


def load_config(name_or_path: str, overrides: str | None = None):
    if is_named_config(name_or_path):
        config = named_config(name_or_path)
        if overrides:
            config.update_from_string(overrides)  # raises ValueError naming an unknown key
        return config, True
    if overrides:
        raise ValueError(f"--config_overrides changes a config trained from scratch; {name_or_path} is a checkpoint")
    if not (Path(name_or_path) / "config.json").is_file():
        raise ValueError(f"--model_name_or_path {name_or_path!r} is neither a modeling_configs/ name nor a checkpoint")
    return AutoConfig.from_pretrained(name_or_path), False


def load_tokenizer(args: PretrainingArguments, model_type: str, train_text: datasets.Dataset, from_scratch: bool,
                   model_max_length: int):
    if args.tokenizer_name:
        return AutoTokenizer.from_pretrained(args.tokenizer_name)
    if not from_scratch and (Path(args.model_name_or_path) / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(args.model_name_or_path)
    # The paper's tokenizer, from the variant's spec.
    kind = args.tokenizer_kind or spec_for(model_type).tokenizer_kind
    logger.info("training a %s tokenizer (vocabulary %d) on the training text", kind, args.vocab_size)
    return train_tokenizer(kind, (text for text in train_text["text"]), args.vocab_size,
                           model_max_length=model_max_length)


def shared_tokenizer(args, training_args: TrainingArguments, checkpoint: str | None, model_type: str,
                     train_text: datasets.Dataset, from_scratch: bool, model_max_length: int):
    """The one tokenizer every process uses, saved in output_dir.

    Under DDP every process must use the same vocabulary, and `tokenizers` training is not
    deterministic across processes: the main process trains (or loads) and saves it, the others
    load it. A resumed run reuses the tokenizer its checkpoints were trained with.
    """
    with training_args.main_process_first(desc="tokenizer"):
        if checkpoint is not None and not args.tokenizer_name:
            tokenizer = AutoTokenizer.from_pretrained(training_args.output_dir)
        elif training_args.process_index == 0:
            tokenizer = load_tokenizer(args, model_type, train_text, from_scratch, model_max_length)
            save_atomically(tokenizer, training_args.output_dir)
        else:
            tokenizer = AutoTokenizer.from_pretrained(training_args.output_dir)
    vocabulary_digest = hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()[:16]
    logger.info("process %d of %d: tokenizer vocabulary digest %s", training_args.process_index,
                training_args.world_size, vocabulary_digest)
    return tokenizer


def load_model(args: PretrainingArguments, config, from_scratch: bool, tokenizer, sentence_task: str | None,
               masking: str = "mlm"):
    # A pretraining head of its own (NSP/SOP, SpanBERT's SBO, ELECTRA's generator + discriminator)
    # goes through AutoModelForPreTraining.
    own_head = sentence_task or hasattr(config, "sbo_weight") or masking in STANDALONE_SCHEMES
    auto_class = AutoModelForPreTraining if own_head else AutoModelForMaskedLM
    if getattr(config, "is_encoder_decoder", False):  # T5: the decoder writes the dropped spans
        auto_class = AutoModelForSeq2SeqLM
    longest = max(args.max_seq_length, args.phase2_max_seq_length if args.phase2_fraction else 0)
    if longest > getattr(config, "max_position_embeddings", longest):
        raise ValueError(f"sequences of {longest} tokens exceed the model's {config.max_position_embeddings} positions")
    if from_scratch:
        config.vocab_size = len(tokenizer)
        config.pad_token_id = tokenizer.pad_token_id
        if getattr(config, "is_encoder_decoder", False):
            config.eos_token_id, config.decoder_start_token_id = tokenizer.eos_token_id, tokenizer.pad_token_id
        if hasattr(config, "sparse_prediction"):
            config.sparse_prediction = True  # vocabulary logits only at masked positions: same loss, less work
        return auto_class.from_config(config)
    model = hf_variants.load_pretrained(args.model_name_or_path, auto_class)
    if model.config.vocab_size != len(tokenizer):
        raise ValueError(f"the checkpoint's vocabulary ({model.config.vocab_size}) does not match the tokenizer's "
                         f"({len(tokenizer)})")
    return model


def set_language_ids(config, pairs: datasets.Dataset) -> None:
    """Give the pair's languages ids in `config.lang2id` (a checkpoint's ids are kept; a config
    without them numbers the languages in order), refusing a model without language ids."""
    if not hasattr(config, "n_langs"):
        raise ValueError(f"objective tlm needs a model with language embeddings (XLM), not {config.model_type}")
    languages = list(pairs[0]["translation"])
    lang2id = dict(config.lang2id or {})
    for language in languages:
        lang2id.setdefault(language, len(lang2id))
    if len(lang2id) > config.n_langs:
        raise ValueError(f"languages {sorted(lang2id)} do not fit the model's n_langs={config.n_langs}")
    config.lang2id, config.id2lang = lang2id, {i: language for language, i in lang2id.items()}


class ModelInputs:
    """Wraps a collator so its output fits the model's forward.

    - Masks are drawn from a generator seeded with (seed, global index of the batch's first
      example), so they are a pure function of the position in the training stream: dynamic
      across epochs, yet identical after `--resume_from_checkpoint`.
    - A model with one 2-way sentence-relation head (BERT's `next_sentence_label`) trains SOP
      through that head; SpanBERT's `sbo_*` targets are dropped for a model without an SBO head.
    """

    def __init__(self, collator, model, seed: int):
        self.collator, self.seed = collator, seed
        self.accepted = set(inspect.signature(model.forward).parameters)

    def __call__(self, features):
        features = [dict(f) for f in features]
        first_index = features[0].pop("example_index", None)
        for feature in features[1:]:
            feature.pop("example_index", None)
        if first_index is not None and hasattr(self.collator, "rng"):
            self.collator.rng = SeededRNG(int(np.random.SeedSequence([self.seed, first_index]).generate_state(1)[0]))
        batch = self.collator(features)
        if "sentence_order_label" in batch and "sentence_order_label" not in self.accepted:
            batch["next_sentence_label"] = batch.pop("sentence_order_label")
        return {k: v for k, v in batch.items() if k in self.accepted}


class PhasedTrainingStream(torch.utils.data.Dataset):
    """The examples of every step, in order: phase 1 then phase 2, each a sequence of fresh
    permutations (epochs) of its dataset. Indexing is lazy: nothing is copied."""

    def __init__(self, phases: list[tuple[datasets.Dataset, int]], seed: int):
        self.datasets = [dataset for dataset, _ in phases]
        self.ends = np.cumsum([count for _, count in phases]).tolist()
        self.seed = seed
        self._permutations: dict[tuple[int, int], np.ndarray] = {}

    def __len__(self) -> int:
        return self.ends[-1]

    def _permutation(self, phase: int, epoch: int) -> np.ndarray:
        if (phase, epoch) not in self._permutations:
            self._permutations = {(phase, epoch): np.random.default_rng([self.seed, phase, epoch]).permutation(
                len(self.datasets[phase]))}  # one epoch at a time is read, in order
        return self._permutations[(phase, epoch)]

    def __getitem__(self, index: int) -> dict:
        phase = bisect.bisect_right(self.ends, index)
        local = index - (self.ends[phase - 1] if phase else 0)
        dataset = self.datasets[phase]
        epoch, position = divmod(local, len(dataset))
        example = dict(dataset[int(self._permutation(phase, epoch)[position])])
        example["example_index"] = index
        return example


class StreamTrainer(CheckpointSafeTrainer):
    """Reads `PhasedTrainingStream` in order (it is already shuffled, phase by phase)."""

    def _get_train_sampler(self, train_dataset=None):
        return torch.utils.data.SequentialSampler(train_dataset or self.train_dataset)


def checkpoint_to_resume(args: PretrainingArguments, training_args: TrainingArguments) -> str | None:
    """`--resume_from_checkpoint PATH|last`, else the newest complete checkpoint-* of output_dir
    (incomplete ones are skipped with a warning), unless `--overwrite_output_dir`."""
    if training_args.resume_from_checkpoint is not None:
        return resolve_checkpoint(training_args.resume_from_checkpoint, training_args.output_dir)
    if args.overwrite_output_dir:
        return None
    checkpoint = last_complete_checkpoint(training_args.output_dir)
    if checkpoint is not None:
        logger.info("resuming from %s (pass --overwrite_output_dir to start over)", checkpoint)
    return checkpoint


@torch.no_grad()
def evaluate(model, examples: datasets.Dataset, collator, batch_size: int) -> dict[str, float]:
    """MLM loss / perplexity / accuracy on masked tokens (+ sentence-relation loss and accuracy)."""
    model.eval()
    total_loss, correct, predicted, relation_correct, relations, relation_loss = 0.0, 0, 0, 0, 0, 0.0
    sbo_total, sbo_count = 0.0, 0
    rtd_total, rtd_correct, rtd_tokens = 0.0, 0, 0
    for start in range(0, len(examples), batch_size):
        batch = collator([examples[i] for i in range(start, min(start + batch_size, len(examples)))])
        batch = {k: v.to(model.device) for k, v in batch.items()}
        output = model(**batch)
        logits = output.prediction_logits if hasattr(output, "prediction_logits") else output.logits
        labels = batch["labels"]
        selected = labels != -100
        if logits.shape[:-1] == labels.shape:
            logits = logits[selected]
        targets = labels[selected]
        total_loss += F.cross_entropy(logits.float(), targets, reduction="sum").item()
        correct += (logits.argmax(-1) == targets).sum().item()
        predicted += targets.numel()
        if getattr(output, "sbo_loss", None) is not None:  # SpanBERT: the span boundary objective's loss too
            count = int((batch["sbo_labels"] != -100).sum())
            sbo_total, sbo_count = sbo_total + output.sbo_loss.item() * count, sbo_count + count
        if getattr(output, "discriminator_loss", None) is not None:  # ELECTRA: replaced token detection
            real = batch["attention_mask"].bool()
            rtd_total += output.discriminator_loss.item() * int(real.sum())
            rtd_correct += ((output.logits[real] > 0).long() == output.discriminator_labels[real]).sum().item()
            rtd_tokens += int(real.sum())
        # NSP (BERT: seq_relationship_logits) or SOP (ALBERT: sop_logits, sentence_order_label).
        relation_logits = getattr(output, "seq_relationship_logits", None)
        relation_logits = relation_logits if relation_logits is not None else getattr(output, "sop_logits", None)
        relation_labels = batch.get("next_sentence_label", batch.get("sentence_order_label"))
        if relation_logits is not None and relation_labels is not None:
            relation_correct += (relation_logits.argmax(-1) == relation_labels).sum().item()
            relation_loss += F.cross_entropy(relation_logits.float(), relation_labels, reduction="sum").item()
            relations += relation_labels.numel()
    if predicted == 0:
        raise ValueError("the validation set produced no masked tokens")
    results = {"mlm_loss": total_loss / predicted, "mlm_perplexity": math.exp(total_loss / predicted),
               "mlm_accuracy": correct / predicted, "masked_tokens": predicted}
    if sbo_count:
        results.update(sbo_loss=sbo_total / sbo_count, sbo_tokens=sbo_count)
    if rtd_tokens:
        results.update(discriminator_loss=rtd_total / rtd_tokens, discriminator_accuracy=rtd_correct / rtd_tokens)
    if relations:
        results.update(sentence_relation_accuracy=relation_correct / relations,
                       sentence_relation_loss=relation_loss / relations)
    return results


def build_examples(text: datasets.Dataset, tokenizer, input_format: str, max_length: int,
                   sentence_task: str | None, args: PretrainingArguments, seed: int, masking: str = "mlm",
                   config=None) -> datasets.Dataset:
    if masking in OWN_EXAMPLE_BUILDERS:
        examples = OWN_EXAMPLE_BUILDERS[masking](text, tokenizer, max_length, config)
    else:
        examples = pretraining_dataset(text, tokenizer, input_format, max_length, task=sentence_task,
                                       short_seq_prob=args.short_seq_prob, seed=seed)
    if len(examples) == 0:
        raise ValueError(f"no {input_format} examples could be built from the text")
    return examples


def parse_arguments(arguments_class: type, argv: list[str] | None, **defaults) -> tuple:
    """(script arguments, TrainingArguments) from the command line, with the pretraining scripts'
    defaults (`defaults` override them); logging set up and the seed set."""
    parser = HfArgumentParser((arguments_class, TrainingArguments))
    parser.set_defaults(**{"weight_decay": 0.01, "save_strategy": "steps", "save_steps": 1000, "logging_steps": 50,
                           "report_to": "none", "dataloader_pin_memory": torch.cuda.is_available(), **defaults})
    args, training_args = parser.parse_args_into_dataclasses(args=argv)
    check_optimizer_arguments(training_args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    set_seed(training_args.seed)
    return args, training_args


def main(argv: list[str] | None = None) -> dict:
    args, training_args = parse_arguments(PretrainingArguments, argv, learning_rate=1e-4, warmup_steps=0.01,
                                          lr_scheduler_type="linear")

    config, from_scratch = load_config(args.model_name_or_path, args.config_overrides)
    # The paper's objective, from the variant's spec.
    masking, sentence_task = parse_objective(args.objective or spec_for(config.model_type).pretraining_objective)
    input_format = args.input_format or ("segment-pair" if sentence_task else "full-sentences")
    if masking in OWN_EXAMPLE_BUILDERS:  # rows of the objective's own shape (TLM: one translation pair each)
        if args.input_format:
            raise ValueError(f"--input_format does not apply to objective {masking!r}: it builds its own rows")
        input_format = f"{masking} rows"
    if (input_format in ("segment-pair", "sentence-pair")) != bool(sentence_task):
        raise ValueError(f"--input_format {input_format} does not fit objective {args.objective!r}: pair formats "
                         "go with +nsp/+sop, full-sentences/doc-sentences with plain masking")
    if args.masking not in ("dynamic", "static"):
        raise ValueError(f"--masking must be dynamic or static, got {args.masking!r}")
    if args.masking == "static" and (masking in STANDALONE_SCHEMES or masking in OWN_EXAMPLE_BUILDERS):
        raise ValueError(f"--masking static stores MLM masks; objective {masking} draws its targets per batch "
                         "(use --masking dynamic)")
    if not 0 <= args.phase2_fraction < 1:
        raise ValueError(f"--phase2_fraction must be in [0, 1), got {args.phase2_fraction}")

    train_text, validation_text = load_text(args, minimum_documents=2 if sentence_task == "nsp" else 1,
                                            parallel=masking in PARALLEL_OBJECTIVES)
    if masking == "tlm":
        set_language_ids(config, train_text)
    checkpoint = checkpoint_to_resume(args, training_args)
    tokenizer = shared_tokenizer(args, training_args, checkpoint, config.model_type, train_text, from_scratch,
                                 model_max_length=max(args.max_seq_length, args.phase2_max_seq_length))
    model = load_model(args, config, from_scratch, tokenizer, sentence_task, masking)
    masking_options = {"whole_word_mask": True} if args.whole_word_mask and masking == "mlm" else {}
    if masking == "span" and hasattr(model.config, "max_span_length"):
        masking_options["max_sbo_offset"] = model.config.max_span_length  # the SBO position table's size
    rate_name, paper_rate = PREDICTION_RATES.get(masking, ("mlm_probability", 0.15))
    masking_options[rate_name] = args.mlm_probability or getattr(config, rate_name, paper_rate)
    make_collator = functools.partial(MASKING_SCHEMES[masking], tokenizer, **masking_options)

    phase_lengths = [args.max_seq_length] + ([args.phase2_max_seq_length] if args.phase2_fraction else [])
    phases = [build_examples(train_text, tokenizer, input_format, length, sentence_task, args, training_args.seed,
                             masking, model.config) for length in phase_lengths]
    validation = build_examples(validation_text, tokenizer, input_format, args.max_seq_length, sentence_task, args,
                                training_args.seed + 1, masking, model.config)
    if args.masking == "static":
        phases = [make_static_masked_dataset(p, tokenizer, args.static_copies, training_args.seed + i, make_collator())
                  for i, p in enumerate(phases)]
        train_collator = DataCollatorForPrecomputedMasks(tokenizer)
    else:
        train_collator = make_collator()

    global_batch = (training_args.per_device_train_batch_size * training_args.gradient_accumulation_steps
                    * training_args.world_size)
    total_steps = training_args.max_steps
    if total_steps <= 0:
        if args.phase2_fraction:
            raise ValueError("--phase2_fraction needs --max_steps (the phases are fractions of the steps)")
        total_steps = math.ceil(training_args.num_train_epochs * len(phases[0]) / global_batch)
    training_args.max_steps = total_steps
    phase2_steps = round(total_steps * args.phase2_fraction)
    steps = [total_steps - phase2_steps] + ([phase2_steps] if args.phase2_fraction else [])
    stream = PhasedTrainingStream([(p, s * global_batch) for p, s in zip(phases, steps)], training_args.seed)
    training_args.remove_unused_columns = False  # the stream is not a datasets.Dataset; ModelInputs filters
    logger.info("objective %s (%s masking, %s), %s examples %s, validation %d examples, %d steps of %d",
                "+".join(filter(None, [masking, sentence_task])), args.masking, input_format,
                "/".join(str(len(p)) for p in phases), phase_lengths, len(validation), total_steps, global_batch)

    def evaluate_now():
        return evaluate(model, validation, ModelInputs(make_collator(seed=training_args.seed), model, 0),
                        training_args.per_device_eval_batch_size)

    before = None if checkpoint else evaluate_now()
    trainer = StreamTrainer(model=model, args=training_args, train_dataset=stream,
                            data_collator=ModelInputs(train_collator, model, training_args.seed),
                            processing_class=tokenizer)
    train_output = trainer.train(resume_from_checkpoint=checkpoint)
    after = evaluate_now()
    trainer.save_model(training_args.output_dir)  # model.safetensors + config.json + tokenizer
    trainer.save_state()  # trainer_state.json: the logged losses
    results = {"before_training": before, "after_training": after, "train_loss": train_output.training_loss,
               "global_step": train_output.global_step, "world_size": training_args.world_size, "objective": "+".join(filter(None, [masking, sentence_task])),
               "masking": args.masking, "input_format": input_format, "sequence_lengths": phase_lengths,
               "steps_per_phase": steps}
    if trainer.is_world_process_zero():
        write_text_atomically(Path(training_args.output_dir, "eval_results.json"), json.dumps(results, indent=2))
        logger.info("validation before: %s", before)
        logger.info("validation after: %s", after)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
