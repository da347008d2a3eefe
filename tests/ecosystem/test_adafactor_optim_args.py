"""``--optim adafactor --optim_args scale_parameter=True``: the Trainer builds the paper's Adafactor,
whose step on each weight is proportional to that weight's root mean square (T5 trains from
scratch with it; transformers' handler ignores --optim_args and turns the scaling off)."""

from __future__ import annotations

import pytest
import torch
from transformers import Seq2SeqTrainingArguments, TrainingArguments
from transformers.optimization import Adafactor

from hf_variants.hub.trainer import CheckpointSafeSeq2SeqTrainer, CheckpointSafeTrainer, adafactor_optim_args
from hf_variants.models.named_configs import named_config
from hf_variants.models.t5 import T5ForConditionalGeneration

TINY_T5 = dict(
    vocab_size=64,
    hidden_size=16,
    num_hidden_layers=1,
    decoder_layers=1,
    num_attention_heads=2,
    head_dim=8,
    intermediate_size=32,
    relative_attention_num_buckets=8,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    ffn_dropout_prob=0.0,
)


def one_adafactor_step(
    tmp_path, optim_args: str | None, trainer_class=CheckpointSafeTrainer
) -> tuple[dict, dict, Adafactor]:
    """Parameters before and after one optimizer step on a fixed batch of a tiny T5 (lr 1e-2)."""
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(named_config("t5-mini", **TINY_T5))
    arguments_class = Seq2SeqTrainingArguments if trainer_class is CheckpointSafeSeq2SeqTrainer else TrainingArguments
    args = arguments_class(
        output_dir=str(tmp_path),
        optim="adafactor",
        optim_args=optim_args,
        learning_rate=1e-2,
        use_cpu=True,
        report_to=[],
        max_grad_norm=0.0,
    )
    trainer = trainer_class(model=model, args=args)
    optimizer = trainer.create_optimizer()
    generator = torch.Generator().manual_seed(1)
    batch = dict(
        input_ids=torch.randint(2, 64, (3, 7), generator=generator),
        labels=torch.randint(2, 64, (3, 4), generator=generator),
    )
    before = {name: weight.detach().clone() for name, weight in model.named_parameters()}
    model(**batch).loss.backward()
    optimizer.step()
    after = {name: weight.detach().clone() for name, weight in model.named_parameters()}
    return before, after, optimizer


@pytest.mark.parametrize("trainer_class", [CheckpointSafeTrainer, CheckpointSafeSeq2SeqTrainer])
def test_scale_parameter_makes_each_step_proportional_to_the_weight_rms(tmp_path, trainer_class):
    before, scaled, optimizer = one_adafactor_step(tmp_path / "scaled", "scale_parameter=True", trainer_class)
    assert isinstance(optimizer, Adafactor)
    _, unscaled, _ = one_adafactor_step(tmp_path / "unscaled", None, trainer_class)
    checked = 0
    for name, weight in before.items():
        unscaled_step = (unscaled[name] - weight).norm()
        if unscaled_step < 1e-8:  # no gradient (e.g. an unused bucket row only): nothing to compare
            continue
        rms = weight.pow(2).mean().sqrt().clamp(min=1e-3)  # Adafactor's eps2 floor
        # The first step's normalised update is the same in both; only the scale differs.
        assert torch.allclose((scaled[name] - weight).norm(), rms * unscaled_step, rtol=1e-4), name
        checked += 1
    assert checked >= 10
    # The point of it for T5: unit-variance embeddings and d^-0.5 projections get steps 4x apart here.
    rms_values = [weight.pow(2).mean().sqrt().item() for weight in before.values() if weight.dim() == 2]
    assert max(rms_values) / min(rms_values) > 3, rms_values


def test_without_optim_args_adafactor_stays_transformers_default(tmp_path):
    _, _, optimizer = one_adafactor_step(tmp_path, None)
    assert optimizer.defaults["scale_parameter"] is False and optimizer.defaults["relative_step"] is False


@pytest.mark.parametrize(
    "bad, message",
    [
        ("scale_parameter=maybe", "expected true or false"),
        ("beta1=fast", "expected a number"),
        ("relative_step=True", "scale_parameter"),
        ("scale_parameter", "key=value"),
    ],
)
def test_bad_optim_args_are_refused_naming_the_item(bad, message):
    with pytest.raises(ValueError, match=message):
        adafactor_optim_args(bad)


def test_optim_args_parse():
    assert adafactor_optim_args(" scale_parameter=True, beta1=0.9,decay_rate=-0.8") == {
        "scale_parameter": True,
        "beta1": 0.9,
        "decay_rate": -0.8,
    }
