"""One sub-package per variant (configuration_<v>.py, modeling_<v>.py, its key map, and ``SPEC`` in
its ``__init__.py``). ``import hf_variants`` finds and registers every one: nothing else lists them."""
