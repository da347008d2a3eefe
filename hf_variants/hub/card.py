"""Model cards: `huggingface_hub.ModelCard` with YAML metadata, a model-index and a readable body.

`build_model_card` turns what a run produced (config, metrics, training summary) into a card;
`hf_variants.hub.run_record.write_model_card` is what example scripts call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from .plot import NON_METRIC_SUFFIXES
from .remote_code import code_file_stems
from .variants import variant_info, variant_name

# library_name is "transformers": the repo is a plain transformers checkpoint (config.json +
# safetensors) whose Auto classes load it (with `import hf_variants`, or trust_remote_code without
# it). The Hub knows that library: it shows a `from transformers import ...` snippet, counts
# downloads through config.json and indexes the architectures. "hf-variants" goes in `tags`.
LIBRARY_NAME = "transformers"
LIBRARY_TAG = "hf-variants"

# Architecture-name suffix -> (Hub task / pipeline tag, Auto class that loads it).
HEAD_TASKS: dict[str, tuple[str, str]] = {
    "ForSequenceClassification": ("text-classification", "AutoModelForSequenceClassification"),
    "ForTokenClassification": ("token-classification", "AutoModelForTokenClassification"),
    "ForQuestionAnswering": ("question-answering", "AutoModelForQuestionAnswering"),
    "ForMultipleChoice": ("multiple-choice", "AutoModelForMultipleChoice"),
    "ForMaskedLM": ("fill-mask", "AutoModelForMaskedLM"),
    "ForPreTraining": ("fill-mask", "AutoModelForPreTraining"),
    "ForImageClassification": ("image-classification", "AutoModelForImageClassification"),
    "ForConditionalGeneration": ("text2text-generation", "AutoModelForSeq2SeqLM"),
    "ForCausalLM": ("text-generation", "AutoModelForCausalLM"),
    "Model": ("feature-extraction", "AutoModel"),
}
# Config fields shown in the architecture table, when the config has them.
ARCHITECTURE_FIELDS = (
    ("num_hidden_layers", "layers"),
    ("hidden_size", "hidden size"),
    ("num_attention_heads", "attention heads"),
    ("intermediate_size", "feed-forward size"),
    ("embedding_size", "embedding size"),
    ("vocab_size", "vocabulary"),
    ("max_position_embeddings", "max positions"),
)
HYPERPARAMETER_KEYS = (
    "learning_rate",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "num_train_epochs",
    "max_steps",
    "warmup_steps",
    "warmup_ratio",
    "lr_scheduler_type",
    "weight_decay",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "max_grad_norm",
    "optim",
    "seed",
    "bf16",
    "fp16",
)


@dataclass
class DatasetInfo:
    """The data a run trained and evaluated on, as the card and its model-index describe it."""

    name: str  # human-readable, e.g. "rt-polarity movie-review sentences"
    id: str  # Hub dataset id ("glue") or a stable local identifier ("local/rt-polarity")
    config: str | None = None  # dataset configuration ("mnli"), if any
    split: str = "validation"  # the split the reported metrics come from
    train_split: str = "train"
    num_train_examples: int | None = None
    num_eval_examples: int | None = None
    source: str | None = None  # where the data came from (URL, package), shown in the card
    revision: str | None = None

    def __post_init__(self):
        if not self.name or not self.id:
            raise ValueError("DatasetInfo needs a non-empty `name` and `id`")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> DatasetInfo:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass
class RunSummary:
    """How the model was trained: shown in the card's Training section."""

    objective: str | None = None  # "mlm", "span-masking+sbo", "text-classification", ...
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    global_step: int | None = None
    epochs: float | None = None
    train_runtime_s: float | None = None  # wall time of training
    final_train_loss: float | None = None
    hardware: str | None = None


def head_task(config: Mapping) -> tuple[str, str]:
    """(Hub task, Auto class) for the config's first architecture, e.g. ("text-classification", ...)."""
    architectures = config.get("architectures") or []
    for suffix, task in sorted(HEAD_TASKS.items(), key=lambda item: -len(item[0])):
        if architectures and architectures[0].endswith(suffix):
            return task
    return HEAD_TASKS["Model"]


def metric_items(eval_results: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(metric type, value) for the quality metrics in a Trainer metrics dict.

    `{"eval_accuracy": 0.84, "eval_runtime": 3.1, "epoch": 2.0}` -> `[("accuracy", 0.84)]`, sorted by
    name. Loss is kept (it is what a pretraining run measures); timing/throughput keys and epoch are
    dropped.
    """
    items = []
    for key, value in eval_results.items():
        name = key.removeprefix("eval_").removeprefix("test_")
        if name == "epoch" or key.endswith(NON_METRIC_SUFFIXES) or isinstance(value, bool):
            continue
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"Metric {key!r} must be a finite number, got {value!r}")
        items.append((name, float(value)))
    return sorted(items)  # stable order, whichever file or dict the metrics were read from


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _format_duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def build_model_card(
    config: Mapping[str, Any],
    *,
    model_name: str,
    eval_results: Mapping[str, Any] | None = None,
    dataset: DatasetInfo | None = None,
    run: RunSummary | None = None,
    task: str | None = None,
    base_model: str | None = None,
    repo_id: str | None = None,
    num_parameters: int | None = None,
    plot_filename: str | None = None,
    license: str = "apache-2.0",
    language: str | list[str] | None = "en",
    limitations: Sequence[str] = (),
) -> ModelCard:
    """A model card for an hf-variants checkpoint.

    Args:
        config: the model config as a dict (`config.to_dict()` or config.json); `model_type` picks
            the variant paragraph and citation, `architectures[0]` the task and Auto class.
        model_name: the name in the title and the model-index.
        eval_results: Trainer metrics (`trainer.evaluate()`), e.g. `{"eval_accuracy": 0.84}`;
            each quality metric becomes one model-index result on `dataset`.
        dataset: what the run trained/evaluated on; required when `eval_results` is given.
        run: objective, hyperparameters, steps, wall time, hardware.
        task: Hub task type for the model-index; defaults to the one of the head.
        base_model: the checkpoint this model was fine-tuned from, if any.
        repo_id: used in the loading snippets; defaults to `<namespace>/<model_name>`.
        num_parameters: shown in the summary line when known.
        plot_filename: a training-curve PNG saved beside the card, embedded in it.
    Returns:
        `ModelCard` whose `.data.eval_results` are exactly the metrics passed in.
    """
    model_type = config.get("model_type")
    if not model_type:
        raise ValueError("config has no `model_type`: cannot tell which variant the card describes")
    run = run or RunSummary()
    head_task_type, auto_class = head_task(config)
    task = task or head_task_type
    metrics = metric_items(eval_results or {})
    if metrics and dataset is None:
        raise ValueError("eval_results were given without the `dataset` they were measured on")

    results = [
        EvalResult(
            task_type=task,
            dataset_type=dataset.id,
            dataset_name=dataset.name,
            dataset_config=dataset.config,
            dataset_split=dataset.split,
            dataset_revision=dataset.revision,
            metric_type=name,
            metric_name=name.replace("_", " ").capitalize(),
            metric_value=value,
        )
        for name, value in metrics
    ]
    variant = variant_name(model_type)
    tags = [LIBRARY_TAG, variant] + ([run.objective] if run.objective else []) + [task]
    data = ModelCardData(
        model_name=model_name,
        license=license,
        language=language,
        library_name=LIBRARY_NAME,
        pipeline_tag=head_task_type,
        tags=tags,
        datasets=[dataset.id] if dataset else None,
        base_model=base_model,
        eval_results=results or None,
        metrics=[name for name, _ in metrics] or None,
    )
    repo_id = repo_id or f"<namespace>/{model_name}"
    sections = [
        _summary_section(model_name, config, variant, run, dataset, base_model, num_parameters, task),
        _description_section(config, model_type),
        _usage_section(repo_id, auto_class, model_type),
        export_section(),
        _training_section(run, dataset, base_model, plot_filename),
        _evaluation_section(metrics, dataset, task),
        _limitations_section(dataset, base_model, head_task_type, limitations),
        _citation_section(model_type),
    ]
    content = f"---\n{data.to_yaml()}\n---\n\n" + "\n\n".join(s for s in sections if s) + "\n"
    return ModelCard(content)


def _summary_section(model_name, config, variant, run, dataset, base_model, num_parameters, task) -> str:
    info = variant_info(config["model_type"])
    what = info.display_name if info else variant
    size = f" with {num_parameters / 1e6:.2f}M parameters" if num_parameters else ""
    if base_model:
        how = f"fine-tuned from [{base_model}](https://huggingface.co/{base_model}) for {task}"
    elif run.objective:
        how = f"trained with the {run.objective} objective"
    else:
        how = "trained"
    data = f" on {dataset.name}" if dataset else ""
    return (
        f"# {model_name}\n\nA {what} model{size}, {how}{data}, built with "
        "hf-variants (Hugging Face-native Transformer variants)."
    )


def _description_section(config, model_type) -> str:
    info = variant_info(model_type)
    lines = ["## Model description", ""]
    if info:
        lines += [info.description, "", f"Paper: [{info.paper_title}]({info.paper_url})."]
    else:
        lines.append(f"An hf-variants model of type `{model_type}`.")
    rows = [(label, config[key]) for key, label in ARCHITECTURE_FIELDS if config.get(key) is not None]
    if rows:
        lines += [
            "",
            "| " + " | ".join(label for label, _ in rows) + " |",
            "|" + "---|" * len(rows),
            "| " + " | ".join(str(v) for _, v in rows) + " |",
        ]
    return "\n".join(lines)


def _usage_section(repo_id, auto_class, model_type) -> str:
    configuration_file, modeling_file = code_file_stems(model_type)
    return f"""## How to use

With the `hf-variants` package installed, importing it registers the `hfv_*` model types with
transformers' Auto classes:

```python
import hf_variants  # noqa: F401  (registers the model types)
from transformers import AutoTokenizer, {auto_class}

tokenizer = AutoTokenizer.from_pretrained("{repo_id}")
model = {auto_class}.from_pretrained("{repo_id}")
```

Without it, the repository's own code loads the model (only `torch` and `transformers` needed):

```python
from transformers import AutoTokenizer, {auto_class}

tokenizer = AutoTokenizer.from_pretrained("{repo_id}", trust_remote_code=True)
model = {auto_class}.from_pretrained("{repo_id}", trust_remote_code=True)
```

(`AutoTokenizer` reads the config too, so it needs the flag although the tokenizer itself is a
standard one.)

`{configuration_file}.py`, `{modeling_file}.py` (the architecture) and `{modeling_file}_blocks.py`
(the shared blocks it imports) in this repository are self-contained code generated by hf-variants
from its sources, the modules the model uses inlined one after the other (the `auto_map` in
`config.json` points at them). Read them before running remote
code, and pin `revision=` to a commit you have reviewed."""


# Runs as written given `model` (loaded as above) and `inputs` (its keyword inputs, e.g.
# `dict(tokenizer(["a sentence"], return_tensors="pt"))`): tests/ecosystem/test_export.py executes it.
EXPORT_SNIPPET = """import torch

model = model.eval()
model.config.padding_free = False  # the padded path traces as one graph (no data-dependent layout)
compiled = torch.compile(model, fullgraph=True)  # same outputs as eager
program = torch.export.export(model, (), inputs)  # an ExportedProgram: program.module()(**inputs)
onnx_program = torch.onnx.export(model, (), kwargs=inputs, dynamo=True)
onnx_program.save("model.onnx")  # run it with onnxruntime.InferenceSession("model.onnx")"""


def export_section() -> str:
    return f"""## Compile and export

`torch.compile`, `torch.export` and the ONNX exporter (`dynamo=True`) trace the padded path; decoders
export their forward with `use_cache=False`:

```python
{EXPORT_SNIPPET}
```"""


def _training_section(run, dataset, base_model, plot_filename) -> str:
    lines = ["## Training", ""]
    facts = []
    if run.objective:
        facts.append(f"- **Objective:** {run.objective}")
    if base_model:
        facts.append(f"- **Initialised from:** `{base_model}`")
    if dataset:
        source = f" (source: {dataset.source})" if dataset.source else ""
        count = f", {dataset.num_train_examples:,} examples" if dataset.num_train_examples else ""
        config = f"/{dataset.config}" if dataset.config else ""
        split = f"split `{dataset.train_split}`"
        facts.append(f"- **Data:** {dataset.name} — `{dataset.id}{config}`, {split}{count}{source}")
    if run.global_step is not None:
        epochs = f" ({run.epochs:.2f} epochs)" if run.epochs is not None else ""
        facts.append(f"- **Optimizer steps:** {run.global_step:,}{epochs}")
    if run.final_train_loss is not None:
        facts.append(f"- **Final training loss:** {run.final_train_loss:.4f}")
    if run.hardware:
        facts.append(f"- **Hardware:** {run.hardware}")
    if run.train_runtime_s is not None:
        facts.append(f"- **Wall time:** {_format_duration(run.train_runtime_s)}")
    lines += facts or ["No training record was saved with this checkpoint."]
    hyper = [(k, run.hyperparameters[k]) for k in HYPERPARAMETER_KEYS if run.hyperparameters.get(k) not in (None, -1)]
    if hyper:
        lines += ["", "| hyperparameter | value |", "|---|---|"]
        lines += [f"| {key} | {_format_value(value)} |" for key, value in hyper]
    if plot_filename:
        lines += ["", f"![Training loss and evaluation metrics against step]({plot_filename})"]
    return "\n".join(lines)


def _evaluation_section(metrics, dataset, task) -> str:
    if not metrics:
        return "## Evaluation\n\nNo evaluation metrics were recorded for this checkpoint."
    count = f" ({dataset.num_eval_examples:,} examples)" if dataset.num_eval_examples else ""
    lines = [
        "## Evaluation",
        "",
        f"Task: {task}. Metrics on `{dataset.split}` of {dataset.name}{count}:",
        "",
        "| dataset | config | split | metric | value |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {dataset.id} | {dataset.config or '-'} | {dataset.split} | {name} | {value:.4f} |"
        for name, value in metrics
    ]
    return "\n".join(lines)


def _limitations_section(dataset, base_model, task, limitations) -> str:
    lines = ["## Limitations", ""]
    items = list(limitations)
    if dataset:
        items.append(
            f"Scores are measured on {dataset.name} (`{dataset.split}`) only; they say little about "
            "other domains, languages or tasks."
        )
    if not base_model and dataset and dataset.num_train_examples:
        if task == "fill-mask":
            items.append(
                f"Pretrained only on {dataset.name} ({dataset.num_train_examples:,} examples), far less "
                "text than the paper used: expect weaker transfer than the original checkpoints."
            )
        else:
            items.append(
                f"Trained from randomly initialised weights on {dataset.name} only "
                f"({dataset.num_train_examples:,} examples), without pretraining."
            )
    items.append(
        "The model inherits the biases of its training text; it is a research artifact, not a "
        "vetted component for decisions about people."
    )
    lines += [f"- {item}" for item in items]
    return "\n".join(lines)


def _citation_section(model_type) -> str | None:
    info = variant_info(model_type)
    if info is None:
        return None
    return f"## Citation\n\n```bibtex\n{info.bibtex}\n```"
