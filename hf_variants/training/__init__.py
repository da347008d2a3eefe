"""What the training scripts of ``examples/`` share that is library logic: Trainer callbacks
(wall-clock budget, throughput), the pretraining text and its rows, the pieces run_clm reuses from
run_pretraining, label encoding, image inputs, seq2seq pairs, extractive QA features and the
fine-tuning checks (peft adapters, model fit, truncation reports).

The scripts' argument dataclasses and their run glue stay in ``examples/examples_support.py``;
nothing in the package imports this sub-package (it sits above data, objectives and hub).
"""
