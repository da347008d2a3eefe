"""How much of the package one forward runs: the measurement of issue 46's "Done when".

For each model below, built from its ``-mini`` named config through the Auto classes, one forward
with labels runs under ``sys.setprofile``. Every Python function of ``hf_variants`` entered is
recorded; the table then gives, per model:

- files: the package files entered, and the lines of those files in all;
- functions: the package functions entered, and the lines of their whole bodies (``def`` line to
  its last line, read with ``ast``; a nested function, comprehension or lambda inside an entered
  function adds nothing: the lines are counted once per file);
- own file: whether the variant's own ``models/<variant>/modeling_<variant>.py`` was entered.

The target (issue 46): <= 6 package files and <= 800 lines of function bodies on the plain path,
the variant's own file among them. ``--set name=value`` sets a config attribute after loading (the
switch that selects the plain path, e.g. ``--set padding_free=False``); values are Python literals.

    python benchmarks/trace_model_path.py                          # the table, as in docs/architecture.md
    python benchmarks/trace_model_path.py --set padding_free=False --set sparse_prediction=False
    python benchmarks/trace_model_path.py --models BertForMaskedLM --list   # + each function entered

Runs on a CPU in well under a minute (mini sizes, batch 2 x 32 tokens, one forward, no backward);
the model is in training mode (dropout on), as in a training step.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForImageClassification,
    AutoModelForMaskedLM,
    AutoModelForPreTraining,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
)

import hf_variants
from hf_variants.models.named_configs import named_config

PACKAGE = Path(hf_variants.__file__).resolve().parent
BATCH, LENGTH, TARGET_LENGTH = 2, 32, 8


def masked(input_ids: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) ids -> (masked ids, labels): 15% of the positions after the first predicted (-100 elsewhere)."""
    chosen = torch.rand(input_ids.shape, generator=generator) < 0.15
    chosen[:, 0] = False
    chosen[:, 1] = True  # at least one target per row
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    return input_ids.masked_fill(chosen, 103), labels


def text_batch(config, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random ids in [5, V), right padding of 4 tokens on the second row."""
    input_ids = torch.randint(5, config.vocab_size, (BATCH, LENGTH), generator=generator)
    attention_mask = torch.ones(BATCH, LENGTH, dtype=torch.long)
    attention_mask[1, -4:] = 0
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def mlm_inputs(config, generator):
    batch = text_batch(config, generator)
    batch["input_ids"], batch["labels"] = masked(batch["input_ids"], generator)
    batch["labels"] = batch["labels"].masked_fill(batch["attention_mask"] == 0, -100)
    return batch


def bert_pretraining_inputs(config, generator):
    return {**mlm_inputs(config, generator), "next_sentence_label": torch.tensor([0, 1])}


def albert_pretraining_inputs(config, generator):
    return {**mlm_inputs(config, generator), "sentence_order_label": torch.tensor([0, 1])}


def spanbert_pretraining_inputs(config, generator):
    """MLM labels on one masked span (positions 5..8) per row, with its span-boundary columns."""
    batch = text_batch(config, generator)
    original = batch["input_ids"].clone()
    labels = torch.full_like(original, -100)
    sbo_left, sbo_right, sbo_relative = (torch.zeros_like(original) for _ in range(3))
    span = torch.arange(5, 9)
    labels[:, span] = original[:, span]
    batch["input_ids"][:, span] = 103
    sbo_left[:, span], sbo_right[:, span], sbo_relative[:, span] = 4, 9, span - 5
    return {
        **batch,
        "labels": labels,
        "sbo_left": sbo_left,
        "sbo_right": sbo_right,
        "sbo_relative": sbo_relative,
        "sbo_labels": labels.clone(),
    }


def sequence_classification_inputs(config, generator):
    return {**text_batch(config, generator), "labels": torch.tensor([0, 1])}


def causal_lm_inputs(config, generator):
    batch = text_batch(config, generator)
    return {**batch, "labels": batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)}


def seq2seq_inputs(config, generator):
    return {
        **text_batch(config, generator),
        "labels": torch.randint(5, config.vocab_size, (BATCH, TARGET_LENGTH), generator=generator),
    }


def xlm_mlm_inputs(config, generator):
    """MLM inputs with a language id per token (row 0 language 0, row 1 language 1)."""
    batch = mlm_inputs(config, generator)
    return {**batch, "langs": torch.arange(BATCH)[:, None].expand(BATCH, LENGTH) % config.n_langs}


def xlnet_lm_inputs(config, generator):
    """transformers' XLNet example: predict the last 4 tokens, which no token may see (perm_mask)."""
    input_ids = torch.randint(5, config.vocab_size, (BATCH, LENGTH), generator=generator)
    predicted = 4
    perm_mask = torch.zeros(BATCH, LENGTH, LENGTH)
    perm_mask[:, :, -predicted:] = 1.0
    target_mapping = torch.zeros(BATCH, predicted, LENGTH)
    target_mapping[:, torch.arange(predicted), LENGTH - predicted + torch.arange(predicted)] = 1.0
    return {
        "input_ids": input_ids,
        "perm_mask": perm_mask,
        "target_mapping": target_mapping,
        "labels": input_ids[:, -predicted:].clone(),
    }


def image_classification_inputs(config, generator):
    """Two random images of the config's size, with class labels."""
    size = config.image_size
    pixel_values = torch.randn(BATCH, config.num_channels, size, size, generator=generator)
    return {"pixel_values": pixel_values, "labels": torch.tensor([0, 1])}


@dataclass(frozen=True)
class Case:
    """One model the issue names: its class, the named config and Auto class it is built from,
    the variant folder whose ``modeling_<variant>.py`` should be entered, and its inputs."""

    class_name: str
    config_name: str
    auto_class: type
    variant: str
    inputs: Callable


CASES = [
    Case("BertForMaskedLM", "bert-mini", AutoModelForMaskedLM, "bert", mlm_inputs),
    Case("BertForPreTraining", "bert-mini", AutoModelForPreTraining, "bert", bert_pretraining_inputs),
    Case("SpanBertForPreTraining", "spanbert-mini", AutoModelForPreTraining, "spanbert", spanbert_pretraining_inputs),
    Case("AlbertForPreTraining", "albert-mini", AutoModelForPreTraining, "albert", albert_pretraining_inputs),
    Case("ElectraForPreTraining", "electra-mini", AutoModelForPreTraining, "electra", mlm_inputs),
    Case(
        "RobertaForSequenceClassification",
        "roberta-mini",
        AutoModelForSequenceClassification,
        "roberta",
        sequence_classification_inputs,
    ),
    Case("GPTLMHeadModel", "gpt2-mini", AutoModelForCausalLM, "gpt", causal_lm_inputs),
    Case("T5ForConditionalGeneration", "t5-mini", AutoModelForSeq2SeqLM, "t5", seq2seq_inputs),
    Case("XLNetLMHeadModel", "xlnet-mini", AutoModelForPreTraining, "xlnet", xlnet_lm_inputs),
    # Beyond the nine (not in the default run; select them with --models).
    Case("XLMWithLMHeadModel", "xlm-mini", AutoModelForMaskedLM, "xlm", xlm_mlm_inputs),
    Case("ViTForImageClassification", "vit-mini", AutoModelForImageClassification, "vit", image_classification_inputs),
    Case(
        "TransformerForConditionalGeneration",
        "transformer-mini",
        AutoModelForSeq2SeqLM,
        "transformer",
        seq2seq_inputs,
    ),
]
DEFAULT_CASES = 9  # the nine: the run without --models


@lru_cache(maxsize=None)
def function_spans(path: str) -> list[tuple[int, int]]:
    """(first line, last line) of every function and lambda in the file, decorators included."""
    tree = ast.parse(Path(path).read_text(), filename=path)
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            spans.append((first, node.end_lineno))
    return spans


@lru_cache(maxsize=None)
def file_lines(path: str) -> int:
    return len(Path(path).read_text().splitlines())


def enclosing_span(path: str, line: int) -> tuple[int, int] | None:
    """The innermost function of ``path`` whose lines hold ``line`` (a code object's first line)."""
    holding = [span for span in function_spans(path) if span[0] <= line <= span[1]]
    return min(holding, key=lambda span: span[1] - span[0]) if holding else None


@dataclass
class Trace:
    """The package functions one call entered: (file, first line, name) per code object."""

    entered: set[tuple[str, int, str]] = field(default_factory=set)

    def profile(self, frame, event, arg) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_name == "<module>" or not code.co_filename.startswith(str(PACKAGE)):
            return  # imports are not the model path; only our own package is counted
        self.entered.add((code.co_filename, code.co_firstlineno, code.co_qualname))

    def run(self, call: Callable[[], object]) -> object:
        sys.setprofile(self.profile)
        try:
            return call()
        finally:
            sys.setprofile(None)

    def summary(self) -> dict:
        files = sorted({path for path, _, _ in self.entered})
        body_lines, functions = 0, set()
        for path in files:
            lines: set[int] = set()
            for entered_path, first, _ in self.entered:
                if entered_path != path:
                    continue
                span = enclosing_span(path, first)
                if span is None:  # a class body or other code outside any function
                    continue
                functions.add((path, span))
                lines.update(range(span[0], span[1] + 1))
            body_lines += len(lines)
        return {
            "files": files,
            "file_lines": sum(file_lines(path) for path in files),
            "functions": len(functions),
            "body_lines": body_lines,
        }


def parse_setting(text: str) -> tuple[str, object]:
    """ "name=value" -> (name, the Python literal value); ValueError naming a malformed one."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise ValueError(f"--set takes name=value (a config attribute and a Python literal), got {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError) as error:
        raise ValueError(f"--set {name}: {value!r} is not a Python literal (True, 0.1, 'eager', ...)") from error


def trace_case(case: Case, settings: dict[str, object], seed: int = 0) -> dict:
    """Build ``case`` through its Auto class, apply ``settings`` to its config, and trace one forward."""
    config = named_config(case.config_name)
    for name, value in settings.items():
        if not hasattr(config, name):
            raise ValueError(f"{case.config_name}'s config has no attribute {name!r} (from --set)")
        setattr(config, name, value)
    torch.manual_seed(seed)
    model = case.auto_class.from_config(config)
    if type(model).__name__ != case.class_name:
        raise ValueError(
            f"{case.auto_class.__name__} built {type(model).__name__} from {case.config_name}, not {case.class_name}"
        )
    model.train()
    inputs = case.inputs(config, torch.Generator().manual_seed(seed))
    trace = Trace()
    output = trace.run(lambda: model(**inputs))
    if getattr(output, "loss", None) is None:
        raise ValueError(f"{case.class_name} returned no loss: the inputs carry no labels it reads")
    summary = trace.summary()
    own = PACKAGE / "models" / case.variant / f"modeling_{case.variant}.py"
    summary["own_file"] = str(own) in summary["files"]
    summary["entered"] = sorted(trace.entered)
    return summary


def relative(path: str) -> str:
    return str(Path(path).relative_to(PACKAGE.parent))


def table(rows: list[tuple[Case, dict]]) -> str:
    lines = [
        "| model (named config) | package files | lines in those files | functions | lines of function bodies | own modeling file |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for case, summary in rows:
        lines.append(
            f"| {case.class_name} ({case.config_name}) | {len(summary['files'])} | {summary['file_lines']:,} | "
            f"{summary['functions']} | {summary['body_lines']:,} | {'yes' if summary['own_file'] else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a config attribute after loading (repeatable), e.g. padding_free=False",
    )
    parser.add_argument("--models", default="", help="comma-separated class names (default: all of them)")
    parser.add_argument("--list", action="store_true", help="also print the files and functions entered")
    args = parser.parse_args(argv)
    settings = dict(parse_setting(text) for text in args.settings)
    wanted = [name for name in args.models.split(",") if name]
    unknown = sorted(set(wanted) - {case.class_name for case in CASES})
    if unknown:
        raise ValueError(f"unknown --models {unknown}; choose from {[case.class_name for case in CASES]}")
    torch.set_num_threads(1)
    chosen = [case for case in CASES if case.class_name in wanted] if wanted else CASES[:DEFAULT_CASES]
    rows = [(case, trace_case(case, settings)) for case in chosen]
    print(table(rows))
    if args.list:
        for case, summary in rows:
            print(f"\n{case.class_name}: {len(summary['files'])} files")
            for path in summary["files"]:
                print(f"  {relative(path)} ({file_lines(path)} lines)")
            for path, line, name in summary["entered"]:
                print(f"    {relative(path)}:{line} {name}")


if __name__ == "__main__":
    main()
