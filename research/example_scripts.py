"""The user scripts of ``examples/`` (run_pretraining, run_clm, run_glue ...) as modules, for the
study that calls their ``main(argv)`` in-process (one process: the study reads the returned results
and keeps the threads it set). The scripts are not a package: each imports
``examples/examples_support.py`` as a sibling, as it does when run as a file, so that folder is put
on ``sys.path`` once, here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"


def example_script(name: str) -> ModuleType:
    """``examples/<name>.py`` as the module ``name`` (registered in sys.modules before it runs, so
    its dataclasses resolve their annotations, and imported once: later calls get the same module)."""
    if name in sys.modules:
        return sys.modules[name]
    path = EXAMPLES_DIR / f"{name}.py"
    if not path.is_file():
        raise ValueError(
            f"examples/{name}.py is missing: the study runs from a source checkout of hf-variants "
            f"(looked in {EXAMPLES_DIR})"
        )
    if str(EXAMPLES_DIR) not in sys.path:
        sys.path.insert(0, str(EXAMPLES_DIR))  # the scripts import examples_support, beside them
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # a failed import must not leave half a module behind
        raise
    return module
