"""The extractive QA windows and span search now live in
:mod:`hf_variants.integrations.question_answering`, beside the pipeline that uses them.

This old path keeps working: it makes ``hf_variants.question_answering`` the very same module object
as ``hf_variants.integrations.question_answering`` (not a copy of its names), so every name, private
ones included, monkeypatching and pickled references behave exactly as before the move. New code
imports the new path.
"""

import sys

from .integrations import question_answering as _moved

sys.modules[__name__] = _moved  # the import system hands out whatever sys.modules holds under this name
