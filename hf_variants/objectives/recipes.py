"""Named pretraining recipes: sequence length, batch, optimizer, learning rate, warmup, schedule and
weight decay per paper, scaled down to the -mini models on a CPU budget (`run_pretraining.py
--recipe bert`). Flags given on the command line override a recipe's values.

Each recipe keeps the paper's choices that carry over to a small model (optimizer, Adam's beta2 and
epsilon, weight decay, schedule shape, masking rate) and scales the rest: batches of 32 x 128 tokens
instead of 256 x 512 (BERT) or 8k x 512 (RoBERTa), and a learning rate raised for the small width and
short run, as small-model pretraining does (BERT-Mini: 4 x 256). The scaled values are starting points
for a sweep (`research/sweep_pretraining.py`), not tuned results; `paper` records what they scale.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Recipe:
    """Training hyperparameters for one objective, as TrainingArguments / run_pretraining names.

    Attributes:
        name: `--recipe` name (the paper's model family).
        objective: the `--objective` it is for (the variant's default; recipes do not set it).
        paper: the paper's values this recipe scales down, for the record.
        max_seq_length / per_device_train_batch_size: tokens per row / rows per step.
        learning_rate: peak rate after warmup.
        warmup_steps: a ratio of the steps when < 1 (run_pretraining's convention), else steps.
        lr_scheduler_type: transformers' schedule name (linear decay for BERT-style papers;
            T5's inverse square root).
        weight_decay / adam_beta2 / adam_epsilon / max_grad_norm / optim: optimizer settings.
        mlm_probability: masking (or noise / prediction) rate, None for the objective's default.
    """

    name: str
    objective: str
    paper: str
    max_seq_length: int = 128
    per_device_train_batch_size: int = 32
    learning_rate: float = 5e-4
    warmup_steps: float = 0.06
    lr_scheduler_type: str = "linear"
    weight_decay: float = 0.01
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-6
    max_grad_norm: float = 1.0
    optim: str = "adamw_torch"
    mlm_probability: float | None = None

    def arguments(self) -> dict[str, object]:
        """The values as argument defaults (name, objective and paper left out; None values too)."""
        values = asdict(self)
        for key in ("name", "objective", "paper"):
            values.pop(key)
        return {key: value for key, value in values.items() if value is not None}


RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe(
            "bert",
            "mlm+nsp",
            "Devlin et al. 2019: 256 x 128 (90%) then 512, Adam lr 1e-4, warmup 10k of 1M, "
            "linear decay, wd 0.01, beta2 0.999",
            learning_rate=5e-4,
            warmup_steps=0.05,
        ),
        Recipe(
            "roberta",
            "mlm",
            "Liu et al. 2019: 8k x 512 full-sentences, lr 6e-4 (base), warmup 24k of 500k, "
            "linear decay, wd 0.01, beta2 0.98, eps 1e-6",
            learning_rate=1e-3,
            warmup_steps=0.06,
            adam_beta2=0.98,
        ),
        Recipe(
            "spanbert",
            "span",
            "Joshi et al. 2020: 256 x 512, lr 1e-4, warmup 10k of 2.4M, linear decay, wd 0.01",
            learning_rate=5e-4,
            warmup_steps=0.05,
            adam_epsilon=1e-8,
        ),
        Recipe(
            "albert",
            "ngram+sop",
            "Lan et al. 2020: 4096 x 512, LAMB lr 0.00176, 125k steps, warmup 3125",
            learning_rate=1e-3,
            warmup_steps=0.03,
        ),
        Recipe(
            "electra",
            "rtd",
            "Clark et al. 2020 (Small): 128 x 128, lr 5e-4, warmup 10k of 1M, linear decay, "
            "wd 0.01, eps 1e-6, generator 1/4 width, discriminator weight 50",
            learning_rate=5e-4,
            warmup_steps=0.05,
        ),
        Recipe(
            "xlnet",
            "plm",
            "Yang et al. 2019 (Large): 8192 x 512, Adam lr 4e-4, warmup then linear decay, eps 1e-6, "
            "wd 0.01; predict 1/6 of the tokens in spans of at most 5",
            learning_rate=4e-4,
            warmup_steps=0.05,
        ),
        Recipe(
            "t5",
            "span-corruption",
            "Raffel et al. 2020: 128 x 512 inputs, Adafactor, inverse square root at 0.01 "
            "after 10k constant steps, 15% noise in spans of mean 3, no weight decay",
            learning_rate=1e-2,
            warmup_steps=0.05,
            lr_scheduler_type="inverse_sqrt",
            weight_decay=0.0,
            optim="adafactor",
            max_grad_norm=0.0,
        ),
        Recipe(
            "xlm",
            "tlm",
            "Lample & Conneau 2019: 64 x 256-token streams, Adam, lr 1e-4 to 5e-4 after a linear warmup of 4000 steps",
            learning_rate=5e-4,
            warmup_steps=0.05,
        ),
    )
}


def recipe_for(name: str) -> Recipe:
    """The recipe called `name` (a ValueError listing the names otherwise)."""
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}: use one of {', '.join(RECIPES)}")
    return RECIPES[name]
