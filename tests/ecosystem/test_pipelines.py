"""transformers pipelines, offline, on hf-variants models saved to disk (every registered variant
that has the head a task needs; a variant added later is covered without new code).

Each pipeline's answer is checked against the same model called directly on the same inputs
(softmax of its logits, its hidden states, its ``generate``), so a pipeline that mangles inputs
or outputs fails. The tokenizer is a real ``tokenizers`` word-level tokenizer over the tiny
vocabulary (ids 0-4: [PAD] [SEP] [CLS] [UNK] [MASK], matching the tiny configs' special ids).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast, pipeline

from hf_variants.registry import SPECS
from tests.common.tiny_variants import is_text, tiny_config

WORDS = (
    "the film was great fun and a bad dull story with good actors plot music i loved hated it this is "
    "sport politics weather rain sun team vote"
).split()
SENTENCE = "the film was great fun and the music is good"
CAUSAL_HEADS = ("ForCausalLM", "LMHeadModel")


def word_tokenizer(vocab_size: int, special_tokens: bool = True) -> PreTrainedTokenizerFast:
    """Word-level tokenizer; ``special_tokens``: wrap texts in [CLS] ... [SEP] (encoders) or not (decoders)."""
    specials = ["[PAD]", "[SEP]", "[CLS]", "[UNK]", "[MASK]"]
    vocab = {token: index for index, token in enumerate(specials + WORDS[: vocab_size - len(specials)])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    if special_tokens:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 1)]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="[PAD]",
        sep_token="[SEP]",
        eos_token="[SEP]",
        cls_token="[CLS]",
        bos_token="[CLS]",
        unk_token="[UNK]",
        mask_token="[MASK]",
        model_max_length=32,
    )


def saved(spec, head: str, tmp_path, **config_overrides) -> tuple[str, torch.nn.Module, PreTrainedTokenizerFast]:
    """A tiny ``spec`` model with ``head`` and its tokenizer saved in tmp_path (the folder, the model, the tokenizer)."""
    config = tiny_config(spec, **config_overrides)
    torch.manual_seed(0)
    model = spec.classes[head](config).eval()
    folder = tmp_path / f"{spec.name}-{head}"
    model.save_pretrained(folder)
    tokenizer = word_tokenizer(config.vocab_size, special_tokens=head not in CAUSAL_HEADS) if is_text(spec) else None
    if tokenizer is not None:
        if getattr(config, "type_vocab_size", 2) < 2:  # no segment embeddings to feed
            tokenizer.model_input_names = ["input_ids", "attention_mask"]
        tokenizer.save_pretrained(folder)
    return str(folder), model, tokenizer


def direct(model, tokenizer, *texts, **kwargs):
    with torch.no_grad():
        return model(**tokenizer(*texts, return_tensors="pt", **kwargs))


def text_specs_with(head: str):
    return [pytest.param(spec, id=spec.name) for spec in SPECS.values() if head in spec.classes and is_text(spec)]


@pytest.mark.parametrize("spec", text_specs_with("ForMaskedLM"))
def test_fill_mask(spec, tmp_path):
    folder, model, tokenizer = saved(spec, "ForMaskedLM", tmp_path)
    results = pipeline("fill-mask", model=folder, top_k=3)("the film was [MASK] fun")
    logits = direct(model, tokenizer, "the film was [MASK] fun").logits[0, 4]  # [CLS] the film was [MASK]
    probabilities = logits.softmax(-1)
    top = probabilities.topk(3)
    assert [r["token"] for r in results] == top.indices.tolist()
    np.testing.assert_allclose([r["score"] for r in results], top.values.numpy(), atol=1e-5)
    assert results[0]["sequence"].startswith("the film was")


@pytest.mark.parametrize("spec", text_specs_with("ForSequenceClassification"))
def test_text_classification(spec, tmp_path):
    labels = {"negative": 0, "positive": 1}
    folder, model, tokenizer = saved(
        spec, "ForSequenceClassification", tmp_path, label2id=labels, id2label={i: name for name, i in labels.items()}
    )
    scores = pipeline("text-classification", model=folder, top_k=None)([SENTENCE])[0]
    expected = direct(model, tokenizer, SENTENCE).logits[0].softmax(-1)
    assert {s["label"]: s["score"] for s in scores} == {
        name: pytest.approx(float(expected[i]), abs=1e-5) for name, i in labels.items()
    }


@pytest.mark.parametrize("spec", text_specs_with("ForSequenceClassification"))
def test_zero_shot_classification_with_an_nli_head(spec, tmp_path):
    nli = {"entailment": 0, "neutral": 1, "contradiction": 2}
    folder, model, tokenizer = saved(
        spec,
        "ForSequenceClassification",
        tmp_path,
        num_labels=3,
        label2id=nli,
        id2label={i: name for name, i in nli.items()},
    )
    candidates = ["sport", "politics", "weather"]
    result = pipeline("zero-shot-classification", model=folder)(
        SENTENCE, candidate_labels=candidates, hypothesis_template="this is {}"
    )
    # transformers' definition: softmax over the candidates' entailment logits (one premise/hypothesis pair each).
    entailment = torch.stack(
        [direct(model, tokenizer, SENTENCE, f"this is {label}").logits[0, nli["entailment"]] for label in candidates]
    ).softmax(-1)
    assert dict(zip(result["labels"], result["scores"])) == {
        label: pytest.approx(float(entailment[i]), abs=1e-5) for i, label in enumerate(candidates)
    }


@pytest.mark.parametrize("spec", text_specs_with("ForTokenClassification"))
def test_token_classification(spec, tmp_path):
    tags = ["O", "B-PER", "I-PER"]
    folder, model, tokenizer = saved(
        spec,
        "ForTokenClassification",
        tmp_path,
        num_labels=3,
        id2label=dict(enumerate(tags)),
        label2id={t: i for i, t in enumerate(tags)},
    )
    entities = pipeline("token-classification", model=folder, ignore_labels=[])(SENTENCE)
    logits = direct(model, tokenizer, SENTENCE).logits[0, 1:-1]  # the words, without [CLS] and [SEP]
    assert [e["word"] for e in entities] == SENTENCE.split()
    assert [e["entity"] for e in entities] == [tags[i] for i in logits.argmax(-1).tolist()]
    np.testing.assert_allclose([e["score"] for e in entities], logits.softmax(-1).max(-1).values.numpy(), atol=1e-5)


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(s, id=s.name)
        for s in SPECS.values()
        if is_text(s) and "decoder_input_ids" not in s.classes["Model"].forward.__code__.co_varnames
    ],
)
def test_feature_extraction(spec, tmp_path):
    folder, model, tokenizer = saved(spec, "Model", tmp_path)
    features = pipeline("feature-extraction", model=folder)(SENTENCE, return_tensors=True)
    expected = direct(model, tokenizer, SENTENCE).last_hidden_state
    torch.testing.assert_close(features, expected, atol=1e-5, rtol=0)


# Every causal LM that generates through transformers' GenerationMixin (Transformer-XL's LM head
# continues text through its memory and does not: can_generate() is False, the pipeline refuses it).
@pytest.mark.parametrize(
    "spec,head",
    [
        pytest.param(s, h, id=f"{s.name}-{h}")
        for s in SPECS.values()
        for h in CAUSAL_HEADS
        if h in s.classes and s.classes[h].can_generate()
    ],
)
def test_text_generation(spec, head, tmp_path):
    folder, model, tokenizer = saved(spec, head, tmp_path)
    generated = pipeline("text-generation", model=folder)(
        "the film was", max_new_tokens=5, do_sample=False, return_full_text=False
    )
    prompt = tokenizer("the film was", return_tensors="pt", add_special_tokens=False)
    expected = model.generate(**prompt, max_new_tokens=5, do_sample=False)[0, prompt["input_ids"].shape[1] :]
    assert generated[0]["generated_text"] == tokenizer.decode(expected, skip_special_tokens=True)


@pytest.mark.parametrize(
    "spec", [pytest.param(s, id=s.name) for s in SPECS.values() if "ForConditionalGeneration" in s.classes]
)
def test_text2text_generation(spec, tmp_path):
    folder, model, tokenizer = saved(spec, "ForConditionalGeneration", tmp_path)
    generated = pipeline("seq2seq-generation", model=folder)(SENTENCE, max_new_tokens=6, do_sample=False)
    expected = model.generate(**tokenizer(SENTENCE, return_tensors="pt"), max_new_tokens=6, do_sample=False)[0]
    assert generated == [{"generated_text": tokenizer.decode(expected, skip_special_tokens=True)}]
    with pytest.raises(ValueError, match="non-empty strings"):
        pipeline("seq2seq-generation", model=folder)("  ")


@pytest.mark.parametrize(
    "spec", [pytest.param(s, id=s.name) for s in SPECS.values() if "ForImageClassification" in s.classes]
)
def test_image_classification_with_the_saved_image_processor(spec, tmp_path):
    from PIL import Image
    from transformers import ViTImageProcessor

    labels = ["shirt", "shoe", "bag"]
    # The pipeline loads every image as RGB (transformers' load_image): a 3-channel model.
    folder, model, _ = saved(
        spec,
        "ForImageClassification",
        tmp_path,
        num_labels=3,
        id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)},
        num_channels=3,
    )
    size = model.config.image_size
    channels = model.config.num_channels
    processor = ViTImageProcessor(
        size={"height": size, "width": size}, image_mean=[0.5] * channels, image_std=[0.5] * channels
    )
    processor.save_pretrained(folder)
    image = Image.fromarray(np.random.default_rng(0).integers(0, 255, (20, 20, 3), dtype=np.uint8))
    scores = pipeline("image-classification", model=folder, top_k=3)(image)
    with torch.no_grad():
        expected = model(**processor(image, return_tensors="pt")).logits[0].softmax(-1)
    assert {s["label"]: s["score"] for s in scores} == {
        name: pytest.approx(float(expected[i]), abs=1e-5) for i, name in enumerate(labels)
    }


LAZY_REGISTRATION_CHECK = """
import sys
import hf_variants
from transformers import pipeline
from transformers.pipelines import PIPELINE_REGISTRY
loaded_at_import = sorted({"hf_variants.integrations.pipelines", "datasets"} & set(sys.modules))
assert not loaded_at_import, loaded_at_import
assert PIPELINE_REGISTRY.supported_tasks["extractive-question-answering"]["impl"] == "hf_variants.integrations.pipelines.ExtractiveQuestionAnsweringPipeline"
generator = pipeline("seq2seq-generation", model=sys.argv[1])
assert type(generator).__qualname__ == "Text2TextGenerationPipeline", type(generator)
print(generator("the film was great", max_new_tokens=3, do_sample=False)[0]["generated_text"] is not None)
assert PIPELINE_REGISTRY.supported_tasks["seq2seq-generation"]["impl"] is type(generator)
"""


def test_import_registers_the_pipeline_tasks_without_loading_them(tmp_path):
    """``import hf_variants`` leaves hf_variants.integrations.pipelines (and datasets) unloaded, yet
    ``pipeline(<our task>)`` finds the task, imports the class and runs (a fresh interpreter)."""
    import os
    import subprocess
    import sys

    spec = SPECS["hfv_t5"]
    folder, _, _ = saved(spec, "ForConditionalGeneration", tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", LAZY_REGISTRATION_CHECK, folder],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("True")
