"""Pipelines transformers 5 no longer ships, registered with its pipeline registry.

``import hf_variants`` registers their names (lazily, see pipeline_tasks.py), so
``transformers.pipeline(<task>, model=...)`` works; importing this module registers the classes:

- ``"extractive-question-answering"`` (:class:`ExtractiveQuestionAnsweringPipeline`): the answer
  span of a question in a context of any length, with run_qa's windowing (``doc_stride``), n-best
  search and SQuAD v2 no-answer threshold (hf_variants.integrations.question_answering: the same code, so
  the pipeline gives run_qa's predictions).
- ``"seq2seq-generation"`` (:class:`Text2TextGenerationPipeline`; transformers 5 removed and now
  refuses the name "text2text-generation"): ``generate`` of an encoder-decoder (T5, the original
  Transformer) on the tokenised input, decoded.
"""

from __future__ import annotations

import datasets
from transformers import AutoModelForQuestionAnswering, AutoModelForSeq2SeqLM, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY

from .pipeline_tasks import QA_TASK, TEXT2TEXT_TASK, lazy_impl
from .question_answering import (
    QaColumns,
    SpanSearch,
    Windowing,
    postprocess_qa_predictions,
    prepare_validation_features,
)


class ExtractiveQuestionAnsweringPipeline(Pipeline):
    """Answer ``question`` from ``context``: ``{"answer", "score", "start", "end"}`` (character
    offsets into the context; ``score`` is the answer's probability among the n-best candidates),
    or a list of ``top_k`` such dicts. SQuAD v2 models: ``handle_impossible_answer=True`` lets the
    empty answer win when its score beats the best span by more than ``null_score_diff_threshold``.

    Call with ``question=..., context=...`` (strings or equal-length lists) or with
    ``{"question": ..., "context": ...}`` dicts. Options (run_qa's names): ``max_seq_length``
    (default: the tokenizer's limit, at most 384), ``doc_stride`` (128, at most half the window),
    ``n_best_size`` (20), ``max_answer_length`` (30), ``top_k`` (1).
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __call__(self, inputs=None, question=None, context=None, **kwargs):
        if inputs is None:
            if question is None or context is None:
                raise ValueError("pass question= and context= (or {'question': ..., 'context': ...} dicts)")
            if isinstance(question, str) != isinstance(context, str):
                raise ValueError("question and context must both be strings or both be lists")
            if isinstance(question, str):
                inputs = {"question": question, "context": context}
            else:
                if len(question) != len(context):
                    raise ValueError(f"{len(question)} questions but {len(context)} contexts")
                inputs = [{"question": q, "context": c} for q, c in zip(question, context)]
        return super().__call__(inputs, **kwargs)

    def _sanitize_parameters(
        self,
        max_seq_length=None,
        doc_stride=None,
        n_best_size=None,
        max_answer_length=None,
        handle_impossible_answer=None,
        null_score_diff_threshold=None,
        top_k=None,
        **kwargs,
    ):
        if kwargs:
            raise ValueError(f"unknown options {sorted(kwargs)} for {QA_TASK}")
        preprocess = {
            key: value
            for key, value in (("max_seq_length", max_seq_length), ("doc_stride", doc_stride))
            if value is not None
        }
        search = {
            key: value
            for key, value in (
                ("n_best_size", n_best_size),
                ("max_answer_length", max_answer_length),
                ("version_2_with_negative", handle_impossible_answer),
                ("null_score_diff_threshold", null_score_diff_threshold),
            )
            if value is not None
        }
        postprocess = {"search": SpanSearch(**search)}
        if top_k is not None:
            if top_k < 1:
                raise ValueError(f"top_k must be >= 1, got {top_k}")
            postprocess["top_k"] = top_k
        return preprocess, {}, postprocess

    def preprocess(self, inputs: dict, max_seq_length: int | None = None, doc_stride: int | None = None) -> dict:
        """One example -> its windows: model tensors (W, T) plus the example and windows for post-processing."""
        if not isinstance(inputs, dict) or not {"question", "context"} <= set(inputs):
            raise ValueError(f"each input needs 'question' and 'context', got {inputs!r}")
        if not inputs["question"].strip() or not inputs["context"].strip():
            raise ValueError("question and context must not be empty")
        if max_seq_length is None:
            max_seq_length = min(384, self.tokenizer.model_max_length)
        if doc_stride is None:
            doc_stride = min(128, max_seq_length // 2)
        windowing = Windowing(max_seq_length, doc_stride, pad_to_max_length=False)  # ValueError if stride >= length
        example = {"id": ["0"], "question": [inputs["question"]], "context": [inputs["context"]]}
        features = prepare_validation_features(example, self.tokenizer, QaColumns(), windowing)
        model_inputs = {name: features[name] for name in self.tokenizer.model_input_names if name in features}
        padded = self.tokenizer.pad(model_inputs, return_tensors="pt")
        return {
            "model_inputs": dict(padded),
            "example": example,
            "windows": {"example_id": features["example_id"], "offset_mapping": features["offset_mapping"]},
        }

    def _forward(self, preprocessed: dict) -> dict:
        output = self.model(**preprocessed["model_inputs"])
        return {
            "start_logits": output.start_logits,
            "end_logits": output.end_logits,
            "example": preprocessed["example"],
            "windows": preprocessed["windows"],
        }

    def postprocess(self, model_outputs: dict, search: SpanSearch = SpanSearch(), top_k: int = 1):
        predictions = postprocess_qa_predictions(
            datasets.Dataset.from_dict(model_outputs["example"]),
            datasets.Dataset.from_dict(model_outputs["windows"]),
            model_outputs["start_logits"].float().numpy(),
            model_outputs["end_logits"].float().numpy(),
            search,
        )
        best = predictions.answers["0"]
        ranked = predictions.n_best["0"]
        if search.version_2_with_negative:
            # run_qa's decision: the empty answer only when it beats the best span by the threshold.
            ranked = sorted(ranked, key=lambda candidate: (candidate["text"] != best, -candidate["score"]))
        answers = [
            {"answer": c["text"], "score": c["probability"], "start": c["start"], "end": c["end"]}
            for c in ranked[:top_k]
        ]
        return answers[0] if top_k == 1 else answers


class Text2TextGenerationPipeline(Pipeline):
    """``[{"generated_text": ...}]`` per input text from ``model.generate`` (generation options,
    e.g. ``max_new_tokens``, ``num_beams``, pass through)."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def _sanitize_parameters(self, **generate_kwargs):
        return {}, generate_kwargs, {}

    def preprocess(self, text: str) -> dict:
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{TEXT2TEXT_TASK} takes non-empty strings, got {text!r}")
        return dict(self.tokenizer(text, return_tensors="pt"))

    def _forward(self, model_inputs: dict, **generate_kwargs) -> dict:
        return {"output_ids": self.model.generate(**model_inputs, **generate_kwargs)}

    def postprocess(self, model_outputs: dict) -> list[dict]:
        return [
            {"generated_text": self.tokenizer.decode(ids, skip_special_tokens=True)}
            for ids in model_outputs["output_ids"]
        ]


def register_pipelines() -> None:
    """Register the classes above with transformers' pipeline registry (idempotent), in place of
    the dotted paths ``import hf_variants`` registered."""
    for task, pipeline_class, auto_class in (
        (QA_TASK, ExtractiveQuestionAnsweringPipeline, AutoModelForQuestionAnswering),
        (TEXT2TEXT_TASK, Text2TextGenerationPipeline, AutoModelForSeq2SeqLM),
    ):
        registered = PIPELINE_REGISTRY.supported_tasks.get(task, {}).get("impl")
        if registered == lazy_impl(task):
            del PIPELINE_REGISTRY.supported_tasks[task]  # our own placeholder: replaced without the overwrite warning
        if registered is not pipeline_class:
            PIPELINE_REGISTRY.register_pipeline(task, pipeline_class=pipeline_class, pt_model=auto_class, type="text")


register_pipelines()
