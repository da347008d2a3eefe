"""How much an ELECTRA checkpoint's discriminator has learned: on held-out documents of the
pretraining corpus, mask 15% of the tokens (85% [MASK], 15% kept, as the RTD collator), let the
checkpoint's own generator replace them, and score the discriminator's logits against which tokens
were really replaced: ROC AUC (0.5 = no skill), accuracy beside the always-"original" prior, and
the losses.

    python -m research.diagnostics.rtd_discriminator_auc runs/electra-mini --output auc.json
"""

from __future__ import annotations

import argparse
import json

import torch
from sklearn.metrics import roc_auc_score
from transformers import AutoTokenizer

import hf_variants
from hf_variants.data import load_pretraining_corpus


def discriminator_report(path: str, documents: int = 32, length: int = 128, seed: int = 0) -> dict[str, float]:
    """Scores of the discriminator of the ElectraForPreTraining checkpoint at `path` (see module docstring)."""
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = hf_variants.ElectraForPreTraining.from_pretrained(path).eval()
    texts = load_pretraining_corpus()["validation"]["text"][:documents]
    batch = tokenizer(texts, truncation=True, max_length=length, padding="max_length", return_tensors="pt")
    input_ids, attention_mask = batch["input_ids"], batch["attention_mask"]
    generator = torch.Generator().manual_seed(seed)
    special = torch.isin(input_ids, torch.tensor(tokenizer.all_special_ids))
    selected = (torch.rand(input_ids.shape, generator=generator) < 0.15) & attention_mask.bool() & ~special
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    masked = selected & (torch.rand(input_ids.shape, generator=generator) < 0.85)
    corrupted = input_ids.masked_fill(masked, tokenizer.mask_token_id)
    torch.manual_seed(seed)  # the generator's sampling
    with torch.no_grad():
        out = model(input_ids=corrupted, attention_mask=attention_mask, labels=labels)
    real = attention_mask.bool()
    replaced = out.discriminator_labels[real].numpy()
    logits = out.logits[real].float().numpy()
    return {
        "replaced_fraction": float(replaced.mean()),
        "prior_accuracy": float(1 - replaced.mean()),
        "accuracy": float(((logits > 0) == replaced).mean()),
        "predicted_replaced_fraction": float((logits > 0).mean()),
        "roc_auc": float(roc_auc_score(replaced, logits)),
        "discriminator_loss": float(out.discriminator_loss),
        "generator_mlm_loss": float(out.mlm_loss),
        "tokens": int(real.sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--documents", type=int, default=32)
    parser.add_argument("--output")
    args = parser.parse_args()
    torch.set_num_threads(1)
    report = {"checkpoint": args.checkpoint, **discriminator_report(args.checkpoint, args.documents)}
    print(json.dumps(report, indent=1))
    if args.output:
        with open(args.output, "w") as handle:
            json.dump(report, handle, indent=1)


if __name__ == "__main__":
    main()
