# dpexp — two commands on a fresh machine (Python 3.11 + pip + gcc):  make demo  and  make test
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
JOBS    ?= 2
FAST    ?=
EXTRAS  ?= test,dask,crypto,pymc,secure
OUTROOT := results$(if $(FAST),/fast)
FIGROOT := figures$(if $(FAST),/fast)
REPORT  ?= report
CONFIGS := $(sort $(wildcard configs/*.yaml))
comma   := ,

.PHONY: install lock demo test test-fast figures figures-bench audit audit-mutants bench clean

install: $(STAMP)

# The environment comes from requirements.lock (exact versions of every dependency and extra: what CI and the
# docs' numbers ran on); dpexp itself is installed editable on top, without resolving again.  pyproject.toml keeps
# the version ranges for installing dpexp into an environment of your own.  `make lock` re-resolves the lock.
$(STAMP): pyproject.toml requirements.lock
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

## lock: re-resolve requirements.lock from pyproject.toml's ranges and extras (uv pip compile)
lock:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml $(foreach e,$(subst $(comma), ,$(EXTRAS)),--extra $(e)) \
	  --python-version 3.11 --python-platform x86_64-manylinux_2_28 --no-header -o requirements.lock

## demo: run configs/demo.yaml and draw its figure (results/demo, figures/demo); prints a one-line summary, the
## full table goes to results/demo/summary.md
demo: $(STAMP)
	$(BIN)/dpexp run configs/demo.yaml --out results/demo --jobs $(JOBS) --force
	$(BIN)/dpexp plot results/demo --out figures/demo --format png,pdf
	$(BIN)/dpexp summarize results/demo --metric spearman --markdown results/demo/summary.md --brief

## test: the whole test suite (CI runs exactly this)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile

## figures: run every config into results/<name>, $(JOBS) configs side by side in one process each, the longest
## first (`dpexp run CONFIG... --into results`), then draw every experiment of results/ into figures/<name> and
## write the HTML report of all of them in $(REPORT)/index.html, in $(JOBS) processes that read each table once
## (`dpexp report --redraw --jobs`); FAST=1 applies each config's `fast:` section (2 repeats by default) and writes to
## results/fast, figures/fast
figures: $(STAMP)
	@failed=""; \
	$(BIN)/dpexp run $(CONFIGS) --into $(OUTROOT) --jobs $(JOBS) $(if $(FAST),--fast) || failed=" runs"; \
	echo "== figures and report"; \
	$(BIN)/dpexp report $(OUTROOT) --figures $(FIGROOT) --redraw --jobs $(JOBS) --out $(REPORT) || failed="$$failed report"; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi

## figures-bench: `make figures` as one measured run in a temporary folder (benchmarks/paper_scale.py --configs all):
## every config's wall, CPU, floor, ratio and peak RSS per process, ranked, then plot and report time; FAST=1 runs
## each config's `fast:` section
figures-bench: $(STAMP)
	$(BIN)/python benchmarks/paper_scale.py --skip-gdsc --jobs $(JOBS) --configs all $(if $(FAST),--fast)

## audit: statistical privacy audit of every registered algorithm
audit: $(STAMP)
	$(BIN)/dpexp audit --out results/audit --jobs $(JOBS)

## audit-mutants: audit every shipped mutant (a real algorithm with one injected privacy bug); prints mutant x
## detected and ends with `mutants detected: K/N` (docs/audit.md)
audit-mutants: $(STAMP)
	$(BIN)/dpexp audit --mutants --jobs $(JOBS)

## bench: the speed benchmarks (print measured numbers and ratios)
bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit $$?; done

clean:
	rm -rf results/* figures report build *.egg-info .pytest_cache
