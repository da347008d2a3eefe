from .configuration_spanbert import SpanBertConfig
from .modeling_spanbert import *  # noqa: F401,F403
from .modeling_spanbert import __all__ as _modeling_all

__all__ = ["SpanBertConfig", *_modeling_all]
