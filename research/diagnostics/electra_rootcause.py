"""Measurements behind docs/electra_rootcause.md: why electra-mini's RTD checkpoint did not fine-tune.

Each subcommand loads an ELECTRA checkpoint (a joint ``ElectraForPreTraining`` folder written by
``examples/run_pretraining.py``) into ``ElectraForSequenceClassification``, beside its random-weight
twin (same config, same seed for the new classifier), and writes one small JSON::

    python -m research.diagnostics.electra_rootcause probe CKPT --out docs/electra_rootcause/probe.json
    python -m research.diagnostics.electra_rootcause finetune CKPT --seeds 42 43 44 --out ...json

``probe``: on 64 movie-review training sentences, per layer: the cosine similarity between
different sentences' first-token states (and their spread), attention entropy (all queries and
the first token's), LayerNorm input scale, GELU inputs, and every parameter group's gradient norm
at the first fine-tuning step (dropout off, same batch, same classifier).
``finetune``: a short fine-tuning loop (AdamW, linear warmup/decay, batch 32, dropout as configured)
on the rt_polarity training split, with the training-loss curve and validation accuracy.
One thread; a run is minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from torch.nn import functional as F
from transformers import AutoConfig, AutoTokenizer, get_linear_schedule_with_warmup

import hf_variants  # noqa: F401
from hf_variants.data import load_named_dataset
from hf_variants.models.electra.modeling_electra import ElectraForSequenceClassification


def build(checkpoint: str, pretrained: bool, seed: int, **overrides) -> ElectraForSequenceClassification:
    """The checkpoint's discriminator (or, pretrained=False, its random-weight twin) with a new
    2-way classifier drawn under ``seed`` (the same draw for both)."""
    config = AutoConfig.from_pretrained(checkpoint, num_labels=2, attn_implementation="eager")
    for key, value in overrides.items():
        setattr(config, key, value)
    torch.manual_seed(seed)
    if pretrained:
        model = ElectraForSequenceClassification.from_pretrained(checkpoint, config=config)
        torch.manual_seed(seed)  # the classifier: re-drawn under the same seed as the twin's
        fresh = ElectraForSequenceClassification(config)
        model.classifier.load_state_dict(fresh.classifier.state_dict())
        return model
    return ElectraForSequenceClassification(config)


def batch_of(tokenizer, rows: dict, max_length: int = 64) -> dict:
    encoded = tokenizer(rows["sentence"], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    encoded["labels"] = torch.tensor(rows["label"])
    return dict(encoded)


def cosine_offdiag(x: torch.Tensor) -> float:
    """Mean cosine similarity between different rows of x (N, H)."""
    x = F.normalize(x.float(), dim=-1)
    sims = x @ x.T
    n = x.shape[0]
    return float((sims.sum() - sims.diagonal().sum()) / (n * (n - 1)))


@torch.no_grad()
def probe_states(model, batch: dict) -> dict:
    model.eval()
    stats: dict[str, list] = {
        "layernorm_input_std": [],
        "layernorm_name": [],
        "gelu_below_-3": [],
        "gelu_input_std": [],
    }
    hooks = []
    mask = batch["attention_mask"].bool()

    def on_layernorm(name):
        def hook(module, inputs, output):
            x = inputs[0]
            x = x[mask] if x.dim() == 3 and x.shape[:2] == mask.shape else x.reshape(-1, x.shape[-1])
            stats["layernorm_name"].append(name)
            stats["layernorm_input_std"].append(float(x.std(dim=-1).mean()))

        return hook

    def on_gelu(module, inputs, output):
        x = inputs[0]
        x = x[mask] if x.dim() == 3 and x.shape[:2] == mask.shape else x.reshape(-1, x.shape[-1])
        stats["gelu_below_-3"].append(float((x < -3).float().mean()))
        stats["gelu_input_std"].append(float(x.std()))

    for name, module in model.electra.named_modules():
        if isinstance(module, torch.nn.LayerNorm):
            hooks.append(module.register_forward_hook(on_layernorm(name)))
        if name.endswith("ffn.activation"):
            hooks.append(module.register_forward_hook(on_gelu))
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    out = model.electra(**inputs, output_hidden_states=True, output_attentions=True, return_dict=True)
    for hook in hooks:
        hook.remove()
    layers = []
    for index, states in enumerate(out.hidden_states):
        first = states[:, 0]
        real = states[mask]
        mean_pooled = (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        layers.append(
            {
                "layer": index,
                "first_token_cosine_between_sentences": cosine_offdiag(first),
                "first_token_spread": float(first.std(dim=0).mean()),
                "mean_pooled_cosine_between_sentences": cosine_offdiag(mean_pooled),
                "token_cosine_random_pairs": cosine_offdiag(
                    real[torch.randperm(real.shape[0], generator=torch.Generator().manual_seed(0))[:256]]
                ),
                "state_norm": float(real.norm(dim=-1).mean()),
            }
        )
    for index, attention in enumerate(out.attentions or ()):
        # attention (B, heads, T, T); entropy over keys for real queries (padding keys get ~0 weight)
        entropy = -(attention.clamp_min(1e-12).log() * attention).sum(-1)  # (B, heads, T)
        real_queries = mask[:, None, :].expand_as(entropy)
        uniform = mask.sum(1).float().log()  # entropy of attending uniformly over the real tokens
        layers[index + 1].update(
            {
                "attention_entropy": float(entropy[real_queries].mean()),
                "attention_entropy_uniform": float(uniform.mean()),
                "first_token_attention_entropy": float(entropy[:, :, 0].mean()),
                "first_token_attention_to_itself": float(attention[:, :, 0, 0].mean()),
                "attention_max_weight": float(attention.amax(-1)[real_queries].mean()),
            }
        )
    logits = model.classifier(out.last_hidden_state[:, 0], None)
    return {"layers": layers, **stats, "classifier_logit_std_across_sentences": float(logits.std(dim=0).mean())}


def gradient_norms(model, batch: dict) -> dict:
    """Per parameter group gradient norms of the classification loss (dropout off)."""
    model.eval()
    model.zero_grad()
    loss = model(**batch).loss
    loss.backward()
    groups: dict[str, float] = {}
    for name, parameter in model.named_parameters():
        if parameter.grad is None:
            continue
        parts = name.split(".")
        if parts[0] == "classifier":
            group = "classifier"
        elif parts[1] == "embeddings":
            group = "embeddings." + parts[2]
        else:
            group = f"layer{parts[3]}"
        groups[group] = groups.get(group, 0.0) + float(parameter.grad.float().pow(2).sum())
    model.zero_grad()
    return {"loss": float(loss), "grad_norms": {k: math.sqrt(v) for k, v in groups.items()}}


def weight_stats(model) -> dict:
    """LayerNorm gains/biases and the RMS of every layer's weights (the state pretraining left)."""
    result = {}
    for name, module in model.electra.named_modules():
        if isinstance(module, torch.nn.LayerNorm):
            result[name] = {
                "gain_mean": float(module.weight.mean()),
                "gain_abs_max": float(module.weight.abs().max()),
                "bias_abs_mean": float(module.bias.abs().mean()),
            }
    return result


def cmd_probe(args) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    train = load_named_dataset("hf_variants/rt_polarity")["train"]
    batch = batch_of(tokenizer, train[:64])
    result = {"checkpoint": args.checkpoint, "batch": "first 64 rt_polarity training sentences, <= 64 tokens"}
    for pretrained in (True, False):
        model = build(args.checkpoint, pretrained, args.seed)
        key = "pretrained" if pretrained else "random"
        result[key] = {**probe_states(model, batch), **gradient_norms(model, batch), "layernorms": weight_stats(model)}
    return result


def layerwise_groups(model, lr: float, decay: float, weight_decay: float) -> list[dict]:
    """AdamW groups: layer l of L gets lr * decay**(L - l), the embeddings decay**(L + 1), the
    classifier lr (ELECTRA's layer-wise learning-rate decay; decay=1 is one learning rate)."""
    depth = model.config.num_hidden_layers
    groups = []
    for name, parameter in model.named_parameters():
        parts = name.split(".")
        if parts[0] == "classifier":
            scale = 1.0
        elif parts[1] == "embeddings":
            scale = decay ** (depth + 1)
        else:
            scale = decay ** (depth - int(parts[3]))
        no_decay = parameter.dim() == 1
        groups.append({"params": [parameter], "lr": lr * scale, "weight_decay": 0.0 if no_decay else weight_decay})
    return groups


@torch.no_grad()
def accuracy(model, tokenizer, rows, batch_size: int = 128) -> float:
    model.eval()
    correct = 0
    for start in range(0, len(rows), batch_size):
        batch = batch_of(tokenizer, rows[start : start + batch_size])
        labels = batch.pop("labels")
        correct += int((model(**batch).logits.argmax(-1) == labels).sum())
    return correct / len(rows)


def finetune(
    checkpoint: str,
    pretrained: bool,
    seed: int,
    steps: int,
    lr: float,
    decay: float,
    warmup: float,
    train_rows: int,
    **overrides,
) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    data = load_named_dataset("hf_variants/rt_polarity")
    train = data["train"].shuffle(seed=seed).select(range(min(train_rows, len(data["train"]))))
    validation = data["validation"]
    model = build(checkpoint, pretrained, seed, **overrides)
    optimizer = torch.optim.AdamW(layerwise_groups(model, lr, decay, 0.01), lr=lr)
    schedule = get_linear_schedule_with_warmup(optimizer, int(warmup * steps), steps)
    generator = torch.Generator().manual_seed(seed)
    losses, started, step = [], time.time(), 0
    while step < steps:
        order = torch.randperm(len(train), generator=generator).tolist()
        for start in range(0, len(order) - 31, 32):
            if step == steps:
                break
            model.train()
            batch = batch_of(tokenizer, train.select(order[start : start + 32])[:])
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(float(loss))
            step += 1
    window = 20
    curve = [sum(losses[i : i + window]) / len(losses[i : i + window]) for i in range(0, len(losses), window)]
    return {
        "pretrained": pretrained,
        "seed": seed,
        "validation_accuracy": accuracy(model, tokenizer, validation),
        "train_loss_every_20_steps": [round(x, 4) for x in curve],
        "seconds": round(time.time() - started, 1),
    }


def cmd_finetune(args) -> dict:
    overrides = json.loads(args.overrides) if args.overrides else {}
    runs = []
    for seed in args.seeds:
        for pretrained in (True, False) if args.twin else (True,):
            run = finetune(
                args.checkpoint,
                pretrained,
                seed,
                args.steps,
                args.lr,
                args.decay,
                args.warmup,
                args.train_rows,
                **overrides,
            )
            print(json.dumps(run), flush=True)
            runs.append(run)
    schedule = {
        "steps": args.steps,
        "batch": 32,
        "lr": args.lr,
        "layerwise_decay": args.decay,
        "warmup": args.warmup,
        "train_rows": args.train_rows,
        "clip": 1.0,
        "weight_decay": 0.01,
        "overrides": overrides,
    }
    return {"checkpoint": args.checkpoint, "schedule": schedule, "runs": runs}


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    probe = sub.add_parser("probe")
    probe.add_argument("checkpoint")
    probe.add_argument("--seed", type=int, default=42)
    probe.add_argument("--out", required=True)
    tune = sub.add_parser("finetune")
    tune.add_argument("checkpoint")
    tune.add_argument("--seeds", type=int, nargs="+", default=[42])
    tune.add_argument("--steps", type=int, default=200)
    tune.add_argument("--lr", type=float, default=5e-4)
    tune.add_argument("--decay", type=float, default=1.0)
    tune.add_argument("--warmup", type=float, default=0.1)
    tune.add_argument("--train_rows", type=int, default=8454)
    tune.add_argument("--twin", action="store_true", help="also the random-weight twin")
    tune.add_argument("--overrides", default=None, help="config overrides as JSON, e.g. '{\"hidden_dropout_prob\": 0}'")
    tune.add_argument("--out", required=True)
    args = parser.parse_args()
    result = cmd_probe(args) if args.command == "probe" else cmd_finetune(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
