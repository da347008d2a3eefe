"""`CheckpointSafeTrainer`: transformers' Trainer with atomic checkpoints and saves, resuming only
from complete checkpoints (`hf_variants.hub.checkpoints`). Its own module because importing
transformers' Trainer is slow: `import hf_variants` does not pay for it."""

from __future__ import annotations

from transformers import Seq2SeqTrainer, Trainer

from .checkpoints import AtomicCheckpointsMixin


class CheckpointSafeTrainer(AtomicCheckpointsMixin, Trainer):
    """transformers' Trainer whose checkpoints, final save, trainer state and results files are
    written atomically, and whose ``train(resume_from_checkpoint=True | "last" | path)`` resumes
    only from a complete checkpoint."""


class CheckpointSafeSeq2SeqTrainer(AtomicCheckpointsMixin, Seq2SeqTrainer):
    """transformers' Seq2SeqTrainer (evaluation and prediction by `generate()` with
    ``--predict_with_generate``) with the atomic checkpoints of `CheckpointSafeTrainer`."""
