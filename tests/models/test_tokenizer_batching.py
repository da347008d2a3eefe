"""Every variant's own tokenizer kind (``SPEC.tokenizer_kind``) against what its model reads.

For each variant a tokenizer of its kind is trained on real text (Austen's novels), a batch of real
sentences of different lengths is tokenized with padding, and each sentence's outputs in the batch
must equal its outputs alone: sequence classification, token classification (at real tokens),
extractive QA (at real tokens) and multiple choice where the variant has the head, and for the
heads that generate, ``generate(**tokenizer(batch, return_tensors="pt", padding=True))`` gives each
prompt's tokens (and step logits) alone (decoder-only prompts padded on the left, see
:func:`generate`). A tokenizer whose template or padding side disagrees with
what the model reads fails here: XLNet's heads read ``<cls>`` at the end, so its tokenizer must write
it there and pad on the left (issue 43: with an ALBERT-style ``[CLS] A [SEP]`` right-padded
tokenizer, a sentence's logits moved by 0.02-0.2 with its batch).

Exceptions, each checked for what it does instead:
- ViT reads images: no tokenizer; its image classifier scores each image of a batch as alone.
- Transformer-XL reads contiguous text only: a padded batch is refused with a ValueError, and a
  batch of equal-length prompts (no padding) generates each prompt's tokens alone.
"""

from __future__ import annotations

import copy
import functools

import pytest
import torch

from hf_variants.registry import SPECS
from hf_variants.tokenization import train_tokenizer
from tests.common.austen_data import austen_corpus
from tests.common.tiny_variants import tiny_config

ATOL = 1e-5
VOCAB_SIZE = 800
NEW_TOKENS = 3
# Real sentences of different lengths (the batch pads the shorter ones).
SENTENCES = [
    "It is a truth universally acknowledged.",
    "Emma smiled.",
    "Mr. Bennet was so odd a mixture of quick parts.",
]
QUESTIONS = ["Who smiled?", "What was Mr. Bennet?", "What is acknowledged?"]
CONTEXT = "Elizabeth walked to Netherfield through the mud."
CHOICES = ["She was tired.", "Her petticoat was six inches deep in mud.", "Yes."]
SEQUENCE_HEADS = ("ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForMultipleChoice")
TEXT_VARIANTS = sorted(spec.name for spec in SPECS.values() if spec.tokenizer_kind != "none")  # all but ViT


@functools.lru_cache(maxsize=None)
def trained_tokenizer(kind: str):
    return train_tokenizer(kind, austen_corpus()["text"][:400], VOCAB_SIZE)


def spec_named(name: str):
    return next(spec for spec in SPECS.values() if spec.name == name)


def model_for(spec, head: str, tokenizer, **overrides):
    """The variant's tiny config sized for ``tokenizer``, with its special-token ids; seeded weights."""
    ids = {}
    for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
        if getattr(tokenizer, name) is not None:
            ids[name] = getattr(tokenizer, name)
    if spec.name == "t5":  # no bos; the decoder starts from the pad token
        ids.pop("bos_token_id", None)
        ids["decoder_start_token_id"] = tokenizer.pad_token_id
    num_labels = 2 if head == "ForQuestionAnswering" else 3
    config = tiny_config(spec, vocab_size=len(tokenizer), num_labels=num_labels, **ids, **overrides)
    torch.manual_seed(0)
    return spec.classes[head](config).eval()


def real_rows(value: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
    """Per-token outputs (B, T, ...) -> each row's real positions only, in order."""
    return [value[row][mask[row].bool()] for row in range(value.shape[0])]


def assert_rows_equal(batched: list[torch.Tensor], alone: list[torch.Tensor], what: str) -> None:
    for row, (in_batch, by_itself) in enumerate(zip(batched, alone, strict=True)):
        torch.testing.assert_close(in_batch, by_itself, atol=ATOL, rtol=0, msg=f"{what}, row {row}")


def run_head(model, head: str, encoded) -> dict[str, torch.Tensor]:
    with torch.no_grad():
        output = model(**encoded)
    if head == "ForQuestionAnswering":
        return {"start_logits": output.start_logits, "end_logits": output.end_logits}
    return {"logits": output.logits}


def encode_for(head: str, tokenizer, rows: list[int]):
    """The head's batch of real text, rows ``rows`` only, tokenized with padding."""
    if head == "ForQuestionAnswering":
        return tokenizer([QUESTIONS[r] for r in rows], [SENTENCES[r] for r in rows], padding=True, return_tensors="pt")
    if head == "ForMultipleChoice":  # each row's choices: a rotation of CHOICES after one context
        choices = [CHOICES[r:] + CHOICES[:r] for r in rows]
        flat = tokenizer(
            [CONTEXT] * (len(rows) * len(CHOICES)),
            [c for row in choices for c in row],
            padding=True,
            return_tensors="pt",
        )
        return {key: value.view(len(rows), len(CHOICES), -1) for key, value in flat.items()}
    return tokenizer([SENTENCES[r] for r in rows], padding=True, return_tensors="pt")


@pytest.mark.parametrize("variant", [v for v in TEXT_VARIANTS if set(SEQUENCE_HEADS) & set(spec_named(v).classes)])
def test_each_sentence_scores_as_alone_in_a_padded_batch(variant):
    spec = spec_named(variant)
    heads = [head for head in SEQUENCE_HEADS if head in spec.classes]
    tokenizer = trained_tokenizer(spec.tokenizer_kind)
    everyone = list(range(len(SENTENCES)))
    for head in heads:
        model = model_for(spec, head, tokenizer)
        batch = encode_for(head, tokenizer, everyone)
        assert not bool(batch["attention_mask"].all()), f"{head}: the batch must be padded"
        batched = run_head(model, head, batch)
        alone = [run_head(model, head, encode_for(head, tokenizer, [row])) for row in everyone]
        for name, value in batched.items():
            if head in ("ForTokenClassification", "ForQuestionAnswering"):
                rows = real_rows(value, batch["attention_mask"])
                singles = [
                    real_rows(out[name], encode_for(head, tokenizer, [r])["attention_mask"])[0]
                    for r, out in zip(everyone, alone)
                ]
            else:
                rows, singles = list(value), [out[name][0] for out in alone]
            assert_rows_equal(rows, singles, f"{variant} {head} {name}")


def generate(model, tokenizer, prompts: list[str]):
    """Greedy ``generate(**tokenizer(prompts, padding=True))``. A decoder-only model continues each
    prompt from its last position, so its prompts are padded on the left: XLNet's own tokenizer does
    so; GPT's byte-level BPE pads right (its classifier, as transformers' GPT-2, reads positions
    0..T-1, which left padding would shift), so it is switched to the left here, as transformers
    asks of every decoder-only model's users."""
    if not model.config.is_encoder_decoder and tokenizer.padding_side != "left":
        tokenizer = copy.deepcopy(tokenizer)
        tokenizer.padding_side = "left"
    encoded = tokenizer(prompts, padding=True, return_tensors="pt")
    settings = dict(
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        do_sample=False,
        return_dict_in_generate=True,
        output_logits=True,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.no_grad():
        return encoded, model.generate(**encoded, **settings)


def generating_heads(spec) -> list[str]:
    """The heads that generate (``can_generate()``), one per class (XLNet's ForPreTraining is its LM head)."""
    heads = {}
    for head, cls in spec.classes.items():
        if cls.can_generate() and cls not in heads.values():
            heads[head] = cls
    return list(heads)


@pytest.mark.parametrize("variant", [v for v in TEXT_VARIANTS if v != "transfo_xl" and generating_heads(spec_named(v))])
def test_batched_generation_gives_each_prompt_its_tokens_alone(variant):
    spec = spec_named(variant)
    heads = generating_heads(spec)
    tokenizer = trained_tokenizer(spec.tokenizer_kind)
    for head in heads:
        model = model_for(spec, head, tokenizer)
        encoded, batched = generate(model, tokenizer, SENTENCES)
        assert not bool(encoded["attention_mask"].all()), "the batch must be padded"
        for row, prompt in enumerate(SENTENCES):
            _, alone = generate(model, tokenizer, [prompt])
            assert torch.equal(batched.sequences[row, -NEW_TOKENS:], alone.sequences[0, -NEW_TOKENS:]), (
                variant,
                head,
                row,
            )
            for step, (in_batch, by_itself) in enumerate(zip(batched.logits, alone.logits, strict=True)):
                torch.testing.assert_close(
                    in_batch[row], by_itself[0], atol=ATOL, rtol=0, msg=f"{variant} {head} row {row} step {step}"
                )


def test_transfo_xl_refuses_a_padded_batch_and_generates_equal_length_prompts_as_alone():
    """Transformer-XL has no padding mask (it reads running text): padding is refused by name; prompts
    truncated to one length form an unpadded batch whose rows generate as alone."""
    spec = spec_named("transfo_xl")
    tokenizer = trained_tokenizer(spec.tokenizer_kind)
    model = model_for(spec, "LMHeadModel", tokenizer)
    with pytest.raises(ValueError, match="padding"):
        generate(model, tokenizer, SENTENCES)
    length = min(len(tokenizer(s)["input_ids"]) for s in SENTENCES)
    encoded = tokenizer(SENTENCES, truncation=True, max_length=length, padding=True, return_tensors="pt")
    settings = dict(
        max_new_tokens=NEW_TOKENS,
        do_sample=False,
        return_dict_in_generate=True,
        output_logits=True,
        pad_token_id=tokenizer.pad_token_id,
    )
    assert bool(encoded["attention_mask"].all()) and bool((encoded["token_type_ids"] == 0).all())
    with torch.no_grad():
        batched = model.generate(**encoded, **settings)
        for row in range(len(SENTENCES)):
            alone = model.generate(**{k: v[row : row + 1] for k, v in encoded.items()}, **settings)
            assert torch.equal(batched.sequences[row], alone.sequences[0])
            for in_batch, by_itself in zip(batched.logits, alone.logits, strict=True):
                torch.testing.assert_close(in_batch[row], by_itself[0], atol=ATOL, rtol=0)


def test_xlm_generate_refuses_right_padded_prompts():
    """XLM re-encodes the prompt with its mask token appended: after a right-padded row's padding the
    token would sit at a position it never has alone, so right padding is refused by name."""
    spec = spec_named("xlm")
    tokenizer = copy.deepcopy(trained_tokenizer(spec.tokenizer_kind))
    tokenizer.padding_side = "right"
    model = model_for(spec, generating_heads(spec)[0], tokenizer)
    encoded = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    assert not bool(encoded["attention_mask"][:, -1].all()), "the batch must be right-padded"
    with pytest.raises(ValueError, match="padded on the left"):
        model.generate(**encoded, max_new_tokens=2, do_sample=False, pad_token_id=tokenizer.pad_token_id)


def test_vit_image_classifier_scores_each_image_as_alone():
    """ViT has no tokenizer (fixed patch count, nothing to pad): a batch's rows score as alone."""
    spec = spec_named("vit")
    config = tiny_config(spec, num_labels=3)
    torch.manual_seed(0)
    model = spec.classes["ForImageClassification"](config).eval()
    pixels = torch.randn(
        3, config.num_channels, config.image_size, config.image_size, generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        batched = model(pixel_values=pixels).logits
        alone = [model(pixel_values=pixels[row : row + 1]).logits[0] for row in range(3)]
    assert_rows_equal(list(batched), alone, "vit ForImageClassification logits")
