"""examples/run_pretraining.py with XLNet: `--model_name_or_path xlnet-mini` trains the spec's
objective, the permutation LM, through the faithful collator (`objectives/plm.py`), on real
Austen chapters; the validation loss on the predicted tokens falls."""

from __future__ import annotations

import pytest
from safetensors.torch import load_file
from test_run_pretraining import COMMON, load_script

XLNET_MINI = [a if a != "bert-tiny" else "xlnet-mini" for a in COMMON]


def test_xlnet_mini_pretrains_with_the_permutation_lm_and_its_loss_falls(tmp_path):
    script = load_script()
    results = script.main(
        XLNET_MINI + ["--max_steps", "12", "--save_steps", "100", "--output_dir", str(tmp_path / "x")]
    )
    before, after = results["before_training"], results["after_training"]
    assert results["objective"] == "plm" and results["global_step"] == 12
    assert before["masked_tokens"] == after["masked_tokens"] > 0  # the same fixed targets, before and after
    assert after["mlm_loss"] < before["mlm_loss"] - 0.3
    saved = load_file(tmp_path / "x" / "model.safetensors")
    assert "lm_loss.bias" in saved and any(k.startswith("transformer.layers.0.attention.r_w_bias") for k in saved)


def test_permutation_lm_refuses_a_sentence_task_and_static_masks(tmp_path):
    script = load_script()
    with pytest.raises(ValueError, match="has no sentence task"):
        script.main(XLNET_MINI + ["--objective", "plm+sop", "--output_dir", str(tmp_path / "a")])
    with pytest.raises(ValueError, match="draws its targets per batch"):
        script.main(XLNET_MINI + ["--masking", "static", "--output_dir", str(tmp_path / "b")])
