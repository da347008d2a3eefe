"""The lookup of a variant's paper by name (``hf_variants.papers.BERT``) now lives in
:mod:`hf_variants.models.papers`, beside the variants' own ``paper.py`` files.

This old path keeps working: it makes ``hf_variants.papers`` the very same module object as
``hf_variants.models.papers`` (not a copy of its names), so every name, private ones included,
monkeypatching and pickled references behave exactly as before the move. New code imports the new
path.
"""

import sys

from .models import papers as _moved

sys.modules[__name__] = _moved  # the import system hands out whatever sys.modules holds under this name
