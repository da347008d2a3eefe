#!/usr/bin/env python
"""Fine-tune an hf-variants encoder for extractive question answering (SQuAD v1 / v2 schema).

Same arguments as transformers' ``run_qa.py``::

    accelerate launch examples/run_qa.py --model_name_or_path <MiniLM folder> \\
        --dataset_name hf_variants/real_text_qa --version_2_with_negative \\
        --max_seq_length 384 --doc_stride 128 --do_train --do_eval --output_dir out/qa

Hub data: ``--dataset_name squad`` or ``--dataset_name squad_v2 --version_2_with_negative``.
Long contexts are split into windows overlapping by ``--doc_stride`` tokens; answers are the best
spans of at most ``--max_answer_length`` tokens among ``--n_best_size`` candidates per window;
for v2 the empty answer wins when its score beats the best span by more than
``--null_score_diff_threshold``. Writes ``predictions.json`` (id -> answer for the validation
set; ``predict_predictions.json`` for the test set), the n-best lists, and EM/F1 (v2: also
HasAns/NoAns) into output_dir.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import datasets
from transformers import AutoModelForQuestionAnswering, DataCollatorWithPadding, default_data_collator

import examples_support as support  # examples/examples_support.py, beside this script
from hf_variants.integrations.question_answering import (
    QaColumns,
    QaPredictions,
    SpanSearch,
    Windowing,
    postprocess_qa_predictions,
    prepare_validation_features,
)
from hf_variants.metrics import squad_scores
from hf_variants.training.fine_tuning import max_length_for
from hf_variants.training.question_answering import (
    QuestionAnsweringTrainer,
    check_answers,
    check_question_room,
    prepare_train_features,
)

logger = logging.getLogger("hf_variants.examples.run_qa")  # level set by support.setup_logging


@dataclass
class QaDataArguments(support.DataArguments):
    max_seq_length: int = field(default=384, metadata={"help": "Window length in tokens (question + context slice)."})
    pad_to_max_length: bool = field(default=True, metadata={"help": "Pad every window to max_seq_length."})
    doc_stride: int = field(default=128, metadata={"help": "Tokens shared by consecutive windows of a long context."})
    n_best_size: int = field(default=20, metadata={"help": "Candidate starts/ends per window."})
    max_answer_length: int = field(default=30, metadata={"help": "Longest answer in tokens."})
    version_2_with_negative: bool = field(default=False, metadata={"help": "Some questions have no answer (SQuAD v2)."})
    null_score_diff_threshold: float = field(
        default=0.0, metadata={"help": "v2: answer '' when null score - best span score exceeds this."}
    )
    question_column_name: str = field(default="question", metadata={"help": "The question column."})
    context_column_name: str = field(default="context", metadata={"help": "The context column."})
    answer_column_name: str = field(default="answers", metadata={"help": "The answers column (SQuAD schema)."})


def score_predictions(
    predictions: QaPredictions, examples: datasets.Dataset, columns: QaColumns, version_2: bool
) -> dict:
    """EM/F1 (v2: also HasAns/NoAns), or {} when the examples have no answers (a test set)."""
    if columns.answers not in examples.column_names:
        return {}
    formatted = [{"id": example_id, "prediction_text": text} for example_id, text in predictions.answers.items()]
    references = [
        {"id": row[columns.id], "answers": row[columns.answers]}
        for row in examples.select_columns([columns.id, columns.answers])
    ]
    return squad_scores(formatted, references, version_2_with_negative=version_2)


def main(argv: Sequence[str] | None = None) -> dict:
    model_args, data_args, training_args = support.start(QaDataArguments, argv)
    columns = QaColumns(data_args.question_column_name, data_args.context_column_name, data_args.answer_column_name)

    raw = support.load_raw_datasets(data_args, model_args)
    examples = support.select_splits(raw, data_args, training_args)
    for split in examples:
        needs_answers = split != "test" or columns.answers in examples[split].column_names
        support.require_columns(
            examples[split],
            [columns.id, columns.question, columns.context, columns.answers if needs_answers else None],
            f"{split} question answering",
            text_columns=[columns.question, columns.context],
        )
        if needs_answers:
            check_answers(examples[split], columns, data_args.version_2_with_negative, split)

    tokenizer = support.load_tokenizer(model_args)
    max_length = max_length_for(tokenizer, data_args.max_seq_length)
    model = support.load_model(model_args, AutoModelForQuestionAnswering, tokenizer, max_seq_length=max_length)
    windowing = Windowing(max_length, data_args.doc_stride, data_args.pad_to_max_length)
    features: dict[str, datasets.Dataset] = {}
    for split, dataset in examples.items():
        check_question_room(dataset, tokenizer, columns, windowing, split)
        prepare = prepare_train_features if split == "train" else prepare_validation_features
        with training_args.main_process_first(desc=f"windowing {split}"):
            features[split] = dataset.map(
                prepare,
                batched=True,
                fn_kwargs={"tokenizer": tokenizer, "columns": columns, "windowing": windowing},
                remove_columns=dataset.column_names,
                num_proc=data_args.preprocessing_num_workers,
                load_from_cache_file=not data_args.overwrite_cache,
                desc=f"Windowing {split}",
            )
        logger.info("%s: %d examples -> %d windows", split, len(dataset), len(features[split]))

    search = SpanSearch(
        data_args.n_best_size,
        data_args.max_answer_length,
        data_args.version_2_with_negative,
        data_args.null_score_diff_threshold,
    )
    collator = default_data_collator if data_args.pad_to_max_length else DataCollatorWithPadding(tokenizer)
    trainer = support.build_trainer(
        model,
        training_args,
        features,
        tokenizer,
        collator,
        trainer_class=QuestionAnsweringTrainer,
        eval_examples=examples.get("validation"),
        post_process=functools.partial(postprocess_qa_predictions, search=search, columns=columns),
        score=functools.partial(score_predictions, columns=columns, version_2=data_args.version_2_with_negative),
    )
    results = support.train_and_evaluate(trainer, examples, data_args, training_args)
    if training_args.do_eval:
        save_predictions(trainer, trainer.last_predictions, "")
    if training_args.do_predict:
        predictions, metrics = trainer.predict_answers(features["test"], examples["test"])
        results.update(support.save_eval_metrics(trainer, metrics, len(examples["test"]), split="predict"))
        save_predictions(trainer, predictions, "predict_")
    return support.finish(trainer, model_args, data_args, "question-answering", results)


def save_predictions(trainer: QuestionAnsweringTrainer, predictions: QaPredictions, prefix: str) -> None:
    """<prefix>predictions.json (id -> text), <prefix>nbest_predictions.json, and for v2 <prefix>null_odds.json."""
    support.write_json(trainer, f"{prefix}predictions.json", predictions.answers)
    support.write_json(trainer, f"{prefix}nbest_predictions.json", predictions.n_best)
    if predictions.null_score_diff:
        support.write_json(trainer, f"{prefix}null_odds.json", predictions.null_score_diff)


if __name__ == "__main__":
    main()
