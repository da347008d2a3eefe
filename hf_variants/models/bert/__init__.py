from .configuration_bert import BertConfig
from .modeling_bert import *  # noqa: F401,F403
from .modeling_bert import __all__ as _modeling_all

__all__ = ["BertConfig", *_modeling_all]
