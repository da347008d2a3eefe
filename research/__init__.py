"""The research application of hf-variants, run from a source checkout (not part of the wheel).

- the zoo (``python -m research.zoo``): every variant's mini pretrained, evaluated beside its
  random-weight twin and written Hub-ready (docs/zoo.md);
- the replication study (``python -m research.replicate``): the lectures' ablation claims re-run at
  CPU scale (docs/replication.md), with ``transfo_xl_memory_check``;
- the evaluation harness (``python -m research.evaluate_pretraining``, ``select_on_validation``,
  ``sweep_pretraining``): fine-tuning and probes of a pretrained checkpoint beside its twin;
- ``research/diagnostics/``: the measurements behind docs/electra_rootcause.md, docs/pretraining.md
  and the replication notes (``python -m research.diagnostics.<name>``).

The study drives the user scripts of ``examples/`` in-process (``research.example_scripts``), so it
needs the checkout those scripts live in; ``hf_variants`` itself never imports it.
"""
