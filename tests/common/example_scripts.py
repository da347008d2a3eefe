"""Import an example script (examples/<name>.py) as a module, for tests in any folder."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.common.paths import EXAMPLES_DIR


def load_example_script(name: str) -> ModuleType:
    """examples/<name>.py as the module ``name`` (registered in sys.modules first, so its
    dataclasses resolve their annotations and sibling scripts importing it get the same module)."""
    if name not in sys.modules:
        if str(EXAMPLES_DIR) not in sys.path:
            sys.path.insert(0, str(EXAMPLES_DIR))  # the scripts import their siblings (examples_support, ...)
        spec = importlib.util.spec_from_file_location(name, EXAMPLES_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
