"""hf-variants: the Transformer family as Hugging Face-native models.

Importing the package registers every variant with transformers' Auto classes, so
``AutoModel.from_pretrained(path_or_repo)`` works for our checkpoints.
"""

from . import registry as _registry
from .configs import named_config, named_config_path
from .conversion import from_transformers, load_pretrained, register_weights as _register_weights, to_transformers
from .models import bert as _bert
from .models.bert import weights as _bert_weights
from .models.bert import *  # noqa: F401,F403
from .models import spanbert as _spanbert
from .models.spanbert import weights as _spanbert_weights
from .models.spanbert import *  # noqa: F401,F403

_registry.register_variant(_bert.BertConfig, "Bert", _bert)
_registry.register_variant(_spanbert.SpanBertConfig, "SpanBert", _spanbert)
# One key map per variant serves from_transformers, to_transformers and from_pretrained (BERT first:
# it answers for transformers' BERT classes).
_register_weights(_bert_weights.WEIGHTS, _bert)
_register_weights(_spanbert_weights.WEIGHTS, _spanbert)

__version__ = "0.1.0"
