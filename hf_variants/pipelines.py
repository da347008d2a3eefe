"""The pipelines now live in :mod:`hf_variants.integrations.pipelines`, with the peft targets: what hf-
variants adds to other libraries.

This old path keeps working: it makes ``hf_variants.pipelines`` the very same module object as
``hf_variants.integrations.pipelines`` (not a copy of its names), so every name, private ones
included, monkeypatching and pickled references behave exactly as before the move. New code imports
the new path.
"""

import sys

from .integrations import pipelines as _moved

sys.modules[__name__] = _moved  # the import system hands out whatever sys.modules holds under this name
