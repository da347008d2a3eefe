"""The pipeline tasks hf-variants adds to transformers, registered lazily.

``import hf_variants`` puts each task's name in transformers' pipeline registry with its class as a
dotted path (the form transformers' own tasks use, resolved by ``pipeline()`` at call time), so
``transformers.pipeline("extractive-question-answering", model=...)`` works without importing
``hf_variants.integrations.pipelines`` (and ``datasets``) until a pipeline is built: that import was ~1.8 s of
``import hf_variants``. Importing ``hf_variants.integrations.pipelines`` registers the classes themselves.
"""

from __future__ import annotations

QA_TASK = "extractive-question-answering"
TEXT2TEXT_TASK = "seq2seq-generation"  # transformers 5 refuses its removed name "text2text-generation"

# task -> (class in hf_variants.integrations.pipelines, the transformers Auto class its models load with)
PIPELINE_TASKS = {
    QA_TASK: ("ExtractiveQuestionAnsweringPipeline", "AutoModelForQuestionAnswering"),
    TEXT2TEXT_TASK: ("Text2TextGenerationPipeline", "AutoModelForSeq2SeqLM"),
}


def lazy_impl(task: str) -> str:
    """The dotted path of ``task``'s pipeline class."""
    return f"hf_variants.integrations.pipelines.{PIPELINE_TASKS[task][0]}"


def register_pipeline_tasks() -> None:
    """Add every task to transformers' registry by dotted path (idempotent; an entry already
    holding the class, after ``hf_variants.integrations.pipelines`` was imported, is kept)."""
    import transformers
    from transformers.pipelines import PIPELINE_REGISTRY

    for task, (_, auto_class_name) in PIPELINE_TASKS.items():
        if task not in PIPELINE_REGISTRY.supported_tasks:
            PIPELINE_REGISTRY.supported_tasks[task] = {
                "impl": lazy_impl(task),
                "pt": (getattr(transformers, auto_class_name),),
                "type": "text",
            }
