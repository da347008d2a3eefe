"""Measurements that serve the study rather than measure speed (those stay in benchmarks/): why
ELECTRA's RTD checkpoint did not fine-tune, whether a masked LM uses its context, the unigram floor
of a held-out loss, the discriminator's AUC, ours vs transformers over an MLM training stretch, and
the pretraining curves' plot. Run each as ``python -m research.diagnostics.<name>`` from the checkout."""
