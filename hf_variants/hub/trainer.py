"""`CheckpointSafeTrainer`: transformers' Trainer with atomic checkpoints and saves, resuming only
from complete checkpoints (`hf_variants.hub.checkpoints`). Its own module because importing
transformers' Trainer is slow: `import hf_variants` does not pay for it."""

from __future__ import annotations

from transformers import Trainer

from .checkpoints import AtomicCheckpointsMixin


class CheckpointSafeTrainer(AtomicCheckpointsMixin, Trainer):
    """transformers' Trainer whose checkpoints, final save, trainer state and results files are
    written atomically, and whose ``train(resume_from_checkpoint=True | "last" | path)`` resumes
    only from a complete checkpoint."""
