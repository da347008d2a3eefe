"""One sub-package per variant (configuration_<v>.py, modeling_<v>.py, its key map, and ``SPEC`` in
its ``__init__.py``). ``import hf_variants`` finds and registers every one: nothing else lists them.

Beside them, the bases every variant subclasses: ``configuration_base.py`` (``VariantConfig``: the
blocks' config + reading the family's transformers config.json) and ``modeling_base.py``
(``VariantPreTrainedModel``: the blocks' PreTrainedModel + conversion on load, checked loads, atomic
saves with remote code); and two look-ups by name: ``named_configs.py`` (the named flavours in
``modeling_configs/``: ``named_config("bert-mini")``) and ``papers.py`` (``papers.BERT``). What the
variants share beyond these lives below them, in ``modules/`` (building blocks, which import nothing
else of the package) and ``conversion/`` (key maps)."""
