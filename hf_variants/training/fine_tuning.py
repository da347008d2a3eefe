"""Checks and adapters of the fine-tuning scripts (examples/run_glue, run_ner, run_qa, run_swag,
run_translation, run_seq2seq, run_distillation, run_image_classification): peft adapters, whether a
tokenizer and a sequence length fit a model, how many inputs truncation cuts, which metrics are
scores for a model card, and the upload of a finished run's folder."""

from __future__ import annotations

import logging

import huggingface_hub
from transformers import PreTrainedModel, Trainer

logger = logging.getLogger("hf_variants.examples")

# Auto class -> peft task type (the head stays trainable: peft keeps its classifier in modules_to_save).
PEFT_TASK_TYPES = {
    "AutoModelForSequenceClassification": "SEQ_CLS",
    "AutoModelForTokenClassification": "TOKEN_CLS",
    "AutoModelForQuestionAnswering": "QUESTION_ANS",
    "AutoModelForCausalLM": "CAUSAL_LM",
    "AutoModelForSeq2SeqLM": "SEQ_2_SEQ_LM",
}
PEFT_METHODS = ("ia3", "lora", "prefix")

# Counts, thresholds and timings in the metrics: not scores for the card.
NOT_SCORES = ("_samples", "_total", "_thresh", "_runtime", "_per_second")
# Our offline stand-ins for public benchmarks: what their scores can and cannot be compared with.
DATA_CAVEATS = {
    "hf_variants/real_text_qa": "Evaluated on cloze questions generated from real Wikipedia and Jane Austen paragraphs "
    "(hf_variants/real_text_qa), not on SQuAD: the scores are not comparable with published SQuAD results.",
    "hf_variants/sentence_pairs": "Evaluated on next-sentence pairs built from real text (hf_variants/sentence_pairs), "
    "not on a GLUE task.",
    "hf_variants/next_sentence_choice": "Evaluated on a next-sentence multiple-choice set built from real text "
    "(random distractors), not on SWAG: it is much easier and not comparable.",
}


def with_peft_adapter(
    model: PreTrainedModel,
    auto_class: type,
    method: str | None,
    *,
    lora_r: int = 8,
    lora_alpha: int = 16,
    lora_dropout: float = 0.0,
    lora_target_modules: str | None = None,
    num_virtual_tokens: int = 20,
):
    """``model`` wrapped by peft's ``method`` (lora, ia3 or prefix; the rest of it frozen), or
    ``model`` itself for ``method=None``. ``auto_class`` (e.g. AutoModelForSequenceClassification)
    picks peft's task type; ``lora_target_modules`` is a comma-separated list of module names (None:
    the variant's registered defaults). ValueError for an unknown method, a task peft has no type
    for, or LoRA targets with another method."""
    if method is None:
        return model
    import peft

    task_type = PEFT_TASK_TYPES.get(auto_class.__name__)
    lora_targets = None  # None: peft reads the variant's registered defaults
    if lora_target_modules is not None:
        if method != "lora":
            raise ValueError(f"--lora_target_modules applies to --peft_method lora, not {method!r}")
        lora_targets = [name.strip() for name in lora_target_modules.split(",") if name.strip()]
        if not lora_targets:
            raise ValueError("--lora_target_modules is empty: give comma-separated module names, e.g. qkv,out")
    configs = {
        "lora": lambda: peft.LoraConfig(
            task_type=task_type, r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout, target_modules=lora_targets
        ),
        "ia3": lambda: peft.IA3Config(task_type=task_type),
        "prefix": lambda: peft.PrefixTuningConfig(task_type=task_type, num_virtual_tokens=num_virtual_tokens),
    }
    if method not in configs:
        raise ValueError(f"--peft_method must be one of {sorted(configs)}, got {method!r}")
    if task_type is None:
        raise ValueError(
            f"--peft_method: no peft task type for {auto_class.__name__}; supported: {sorted(PEFT_TASK_TYPES)}"
        )
    wrapped = peft.get_peft_model(model, configs[method]())
    trainable, total = wrapped.get_nb_trainable_parameters()
    logger.info("peft %s: %d trainable parameters of %d (%.2f%%)", method, trainable, total, 100 * trainable / total)
    return wrapped


def check_model_fits(model: PreTrainedModel, tokenizer, max_seq_length: int | None) -> None:
    """ValueError when the tokenizer has more tokens than the model's vocabulary, or
    ``max_seq_length`` exceeds its position embeddings (``tokenizer=None``: image models)."""
    if tokenizer is not None and len(tokenizer) > model.config.vocab_size:
        raise ValueError(
            f"the tokenizer has {len(tokenizer)} tokens but the model's vocab_size is {model.config.vocab_size}"
        )
    if max_seq_length is not None and max_seq_length > model.config.max_position_embeddings:
        raise ValueError(
            f"--max_seq_length {max_seq_length} exceeds the model's max_position_embeddings "
            f"({model.config.max_position_embeddings})"
        )


def max_length_for(tokenizer, requested: int) -> int:
    """``requested``, capped (with a warning) at what the tokenizer allows."""
    if requested > tokenizer.model_max_length:
        logger.warning(
            "--max_seq_length %d > the tokenizer's limit %d: using %d",
            requested,
            tokenizer.model_max_length,
            tokenizer.model_max_length,
        )
        return tokenizer.model_max_length
    return requested


def report_truncation(
    tokenizer,
    split: str,
    first: list,
    second: list | None,
    max_length: int,
    split_into_words: bool = False,
    argument: str = "--max_seq_length",
    consequence: str = "are truncated",
) -> int:
    """Count (and log, once per split) the inputs longer than ``max_length`` tokens (the limit of
    ``argument``), which tokenisation truncates (``split_into_words``: inputs are lists of words,
    as for NER)."""
    # A dataset column may come as a lazy Column (datasets >= 4): the tokenizer takes lists only.
    first, second = list(first), None if second is None else list(second)
    encoded = tokenizer(first, *([second] if second is not None else []), is_split_into_words=split_into_words)
    too_long = sum(len(ids) > max_length for ids in encoded["input_ids"])
    if too_long:
        logger.warning(
            "%s: %d of %d inputs are longer than %s %d tokens and %s",
            split,
            too_long,
            len(first),
            argument,
            max_length,
            consequence,
        )
    return too_long


def card_scores(metrics: dict) -> dict:
    """The ``eval_*`` scores of a run's metrics, without counts, thresholds and timings."""
    return {key: value for key, value in metrics.items() if key.startswith("eval_") and not key.endswith(NOT_SCORES)}


def push_if_asked(trainer: Trainer) -> None:
    """Upload output_dir (model, tokenizer, metrics, card; not the checkpoints) when --push_to_hub.

    Not ``Trainer.push_to_hub``: it would replace our model card with its own.
    """
    if not trainer.args.push_to_hub:
        return
    if trainer.hub_model_id is None:
        trainer.init_hf_repo()
    if trainer.is_world_process_zero():
        huggingface_hub.upload_folder(
            repo_id=trainer.hub_model_id,
            folder_path=trainer.args.output_dir,
            commit_message="End of training",
            token=trainer.args.hub_token,
            revision=trainer.args.hub_revision,
            ignore_patterns=["_*", "checkpoint-*"],
        )
