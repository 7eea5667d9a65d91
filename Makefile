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

lint: install
	$(VENV)/bin/ruff check sweep tests benchmarks
	$(VENV)/bin/lint-imports

clean:
	rm -rf results .numba_cache .pytest_cache
