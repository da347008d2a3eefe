"""The named configs (``named_config("bert-mini")``) now live in
:mod:`hf_variants.models.named_configs`, beside the variants whose SPECs name them.

This old path keeps working: it makes ``hf_variants.configs`` the very same module object as
``hf_variants.models.named_configs`` (not a copy of its names), so every name, private ones
included, monkeypatching and pickled references behave exactly as before the move. New code imports
the new path.
"""

import sys

from .models import named_configs as _moved

sys.modules[__name__] = _moved  # the import system hands out whatever sys.modules holds under this name
