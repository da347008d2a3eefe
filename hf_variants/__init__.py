"""hf-variants: the Transformer family as Hugging Face-native models.

Importing the package registers every variant found under ``hf_variants/models/`` (each declares
one ``SPEC``, see registry.py) with transformers' Auto classes, and exports its classes here, so
``AutoModel.from_pretrained(path_or_repo)`` and ``hf_variants.BertForMaskedLM`` both work.
"""

import importlib as _importlib

from . import models as _models
from . import registry as _registry
from .conversion import from_transformers, load_pretrained, to_transformers
from .models.named_configs import named_config, named_config_path

for _spec in _registry.discover_specs(_models):
    _registry.register(_spec)
    _variant = _importlib.import_module(f"{_models.__name__}.{_spec.name}")
    globals().update({_name: getattr(_variant, _name) for _name in _variant.__all__ if _name != "SPEC"})

from .integrations.peft_targets import register_peft_targets as _register_peft_targets

_register_peft_targets()  # LoraConfig / IA3Config(task_type=...) need no target_modules for our model types

from .integrations.pipeline_tasks import register_pipeline_tasks as _register_pipeline_tasks

# pipeline("extractive-question-answering") and pipeline("seq2seq-generation"); their module
# (hf_variants.integrations.pipelines, which imports datasets) loads when a pipeline is first built.
_register_pipeline_tasks()

__version__ = "0.1.0"
