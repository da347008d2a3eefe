"""Atomic folder and file writes now live in :mod:`hf_variants.hub.atomic`, beside the checkpoint
saving and publishing code that uses them.

This old path keeps working: it makes ``hf_variants.atomic`` the very same module object as
``hf_variants.hub.atomic`` (not a copy of its names), so every name, private ones included,
monkeypatching and pickled references behave exactly as before the move. New code imports the new
path.
"""

import sys

from .hub import atomic as _moved

sys.modules[__name__] = _moved  # the import system hands out whatever sys.modules holds under this name
