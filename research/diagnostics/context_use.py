"""Does a pretrained masked LM use its context? Held-out prediction at [MASK] positions against the
best context-free predictor.

A masked LM's held-out loss mixes three kinds of selected positions (BERT's 80/10/10): [MASK]
(80%), a random token (10%) and the unchanged token (10%). At the unchanged ones a model can copy
its input, so the overall loss falls below the unigram level without any use of context. This
script scores the [MASK] positions alone and sets beside them the loss of the unigram distribution
fitted on the same held-out tokens (a lower bound for every predictor that ignores the context):
a model uses its context only where its [MASK] loss is below that bound.

    python -m research.diagnostics.context_use runs/bert-mini runs/roberta-mini --rows 400 --output context_use.json

Rows: held-out documents of the pretraining corpus (`load_pretraining_corpus()["validation"]`),
each tokenized with the checkpoint's own tokenizer and cut into rows of `--length` tokens
(`[CLS] ... [SEP]` or `<s> ... </s>`), masked by `DataCollatorForMaskedLM` (15%, 80/10/10, seed 0).
Also prints the top predictions at a few positions of a fixed paragraph (a model stuck at the
unigram level predicts the most frequent tokens everywhere).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModelForPreTraining, AutoTokenizer

import hf_variants  # noqa: F401  (registers the model types)
from hf_variants.data import load_pretraining_corpus
from hf_variants.objectives.mlm import DataCollatorForMaskedLM

PARAGRAPH = (
    "The function returns a list of strings. Each string is the name of a file in the directory. "
    "If the directory does not exist, the function raises an exception."
)


def corpus_rows(tokenizer, split: str, rows: int, length: int) -> list[dict]:
    """Up to `rows` rows of `length` tokens from the documents of the pretraining corpus' `split`
    ("train" or "validation"), each wrapped in the tokenizer's first and last special tokens."""
    body = length - 2
    ids: list[int] = []
    for text in load_pretraining_corpus()[split]["text"]:
        ids.extend(tokenizer(text, add_special_tokens=False)["input_ids"])
        if len(ids) >= rows * body:
            break
    first = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    last = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    return [
        {"input_ids": [first, *ids[start : start + body], last], "special_tokens_mask": [1] + [0] * body + [1]}
        for start in range(0, min(len(ids), rows * body) - body + 1, body)
    ]


def load_masked_lm(path: str):
    """The checkpoint's masked LM: the pretraining model's MLM head, or ELECTRA's generator (the
    joint model's discriminator has no MLM head: `AutoModelForMaskedLM` would add a random one)."""
    model = AutoModelForPreTraining.from_pretrained(path)
    if hasattr(model, "generator_as_masked_lm"):
        model = model.generator_as_masked_lm()
    return model.eval()


def mlm_logits(output) -> torch.Tensor:
    for name in ("prediction_logits", "generator_logits", "logits"):
        value = getattr(output, name, None)
        if value is not None:
            return value
    raise ValueError(f"no masked-LM logits in {type(output).__name__}")


@torch.no_grad()
def context_use(path: str, rows: int, length: int, batch_size: int = 32) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = load_masked_lm(path)
    examples = corpus_rows(tokenizer, "validation", rows, length)
    collator = DataCollatorForMaskedLM(tokenizer, 0.15, seed=0)
    # Unigram fitted on the held-out tokens themselves (add-one smoothed): the context-free bound.
    counts = np.ones(len(tokenizer), dtype=np.float64)
    for example in examples:
        np.add.at(counts, [t for t, s in zip(example["input_ids"], example["special_tokens_mask"]) if not s], 1)
    unigram_log_probs = torch.from_numpy(np.log(counts / counts.sum()))
    sums = {"all": [0.0, 0, 0], "mask": [0.0, 0, 0]}
    unigram_sum, unigram_count, predicted_as_mode = 0.0, 0, 0
    mode = int(counts.argmax())
    for start in range(0, len(examples), batch_size):
        batch = collator(examples[start : start + batch_size])
        labels = batch.pop("labels")
        logits = mlm_logits(model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])).float()
        selected = labels != -100
        at_mask = selected & (batch["input_ids"] == tokenizer.mask_token_id)
        for key, where in (("all", selected), ("mask", at_mask)):
            chosen = logits[where]
            sums[key][0] += F.cross_entropy(chosen, labels[where], reduction="sum").item()
            sums[key][1] += int((chosen.argmax(-1) == labels[where]).sum())
            sums[key][2] += int(where.sum())
        unigram_sum -= unigram_log_probs[labels[at_mask]].sum().item()
        unigram_count += int(at_mask.sum())
        predicted_as_mode += int((logits[at_mask].argmax(-1) == mode).sum())
    result = {"checkpoint": path, "rows": len(examples), "length": length}
    for key, (loss, correct, count) in sums.items():
        result[f"{key}_loss"], result[f"{key}_accuracy"], result[f"{key}_count"] = loss / count, correct / count, count
    result.update(
        unigram_loss_at_mask=unigram_sum / unigram_count,
        mask_loss_below_unigram=unigram_sum / unigram_count - result["mask_loss"],
        unigram_mode=tokenizer.convert_ids_to_tokens(mode),
        mode_share_of_mask_predictions=predicted_as_mode / unigram_count,
        mode_share_of_tokens=float(counts[mode] / counts.sum()),
    )
    encoded = tokenizer(PARAGRAPH, return_tensors="pt")["input_ids"][0]
    tops = {}
    for position in range(1, min(len(encoded) - 1, 13)):
        masked = encoded.clone()
        masked[position] = tokenizer.mask_token_id
        top = mlm_logits(model(input_ids=masked[None])).float()[0, position].topk(3).indices
        tops[tokenizer.convert_ids_to_tokens(int(encoded[position]))] = tokenizer.convert_ids_to_tokens(top)
    result["paragraph_top3"] = tops
    return result


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", help="write the results as JSON here")
    args = parser.parse_args(argv)
    if args.rows <= 0 or args.length < 8:
        raise ValueError("--rows must be positive and --length at least 8")
    torch.set_num_threads(args.threads)
    results = []
    for path in args.checkpoints:
        result = context_use(path, args.rows, args.length)
        results.append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "paragraph_top3"}))
        for word, top in result["paragraph_top3"].items():
            print(f"  {word:>12} -> {top}")
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
