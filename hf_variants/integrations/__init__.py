"""What hf-variants adds to other libraries of the ecosystem, so that they take our model types as
they take transformers' own:

- ``peft_targets.py``: peft's default target modules for every registered variant (``LoraConfig``
  without ``target_modules``), registered by ``import hf_variants``;
- ``pipeline_tasks.py`` + ``pipelines.py``: the pipelines transformers 5 no longer ships
  (extractive question answering, seq2seq generation); ``import hf_variants`` registers their task
  names by dotted path, ``pipelines.py`` (which imports ``datasets``) loads when one is built;
- ``question_answering.py``: the windows over long contexts and the n-best span search that the QA
  pipeline and ``examples/run_qa.py`` share.

Nothing here is imported by the models: this package stands above ``models/`` and ``modules/``.
This file imports nothing, so ``import hf_variants`` does not load ``pipelines.py``.
"""
