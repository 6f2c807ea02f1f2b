# The README's two commands:
#   make demo   set up .venv from the lock, install robustlab, run `robustlab demo`
#   make test   set up .venv from the lock with the test extras, run the whole test suite: the fast half,
#               then the slow half (which also builds the docs with `mkdocs build --strict` and runs the
#               drift check); both always run, each one's failures are listed at the end, and the exit
#               status is non-zero if either failed
# Installs come from src/robustlab/locks (exact versions and hashes for Python 3.11 on Linux x86_64;
# scripts/install.sh). Also: make lock (refresh the locks), make drift (the golden tests against the
# newest versions pip resolves), make docs (the site into site/), make docs-serve.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
PIP_VERSION := 26.3
LOCK := src/robustlab/locks/py311-linux-x86_64.txt
LOCK_BASE := src/robustlab/locks/py311-linux-x86_64-base.txt
DEMO_OUT ?= robustlab-demo

.PHONY: demo test test-fast venv clean bench-corruptions parity-corruptions docs docs-serve lock drift

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet pip==$(PIP_VERSION)

$(VENV)/.installed: pyproject.toml $(LOCK_BASE) | $(BIN)/python
	bash scripts/install.sh $(BIN)/python base
	touch $@

$(VENV)/.installed-test: pyproject.toml $(LOCK) | $(BIN)/python
	bash scripts/install.sh $(BIN)/python test
	touch $@ $(VENV)/.installed

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e '.[docs]'
	touch $@ $(VENV)/.installed

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/robustlab demo --out $(DEMO_OUT)

# Whole suite: the fast default set, then the tests marked slow; both halves always run.
test: $(VENV)/.installed-test
	@fast=0; slow=0; \
	$(BIN)/python -m pytest -n 2 -m "not slow" -rfE tests 2>&1 | tee .test-fast.log; fast=$${PIPESTATUS[0]}; \
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m "slow" -rfE tests -p no:cacheprovider 2>&1 | tee .test-slow.log; \
	slow=$${PIPESTATUS[0]}; [ $$slow -eq 5 ] && slow=0; \
	echo; echo "== make test: fast half exit $$fast, slow half exit $$slow"; \
	for half in fast slow; do grep -E '^(FAILED|ERROR) ' .test-$$half.log | sed "s/^/  $$half: /"; done; \
	[ $$fast -eq 0 ] && [ $$slow -eq 0 ]

test-fast: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 tests

# The documentation site (mkdocs-material + mkdocstrings); --strict fails on any warning.
docs: $(VENV)/.installed-docs
	$(BIN)/mkdocs build --strict

docs-serve: $(VENV)/.installed-docs
	$(BIN)/mkdocs serve

bench-corruptions: $(VENV)/.installed
	$(BIN)/python perf/speed_corruptions.py

parity-corruptions: $(VENV)/.installed
	$(BIN)/python perf/parity_corruptions.py

# Refresh the locks from pyproject.toml's ranges (uv, PyPI); commit them and rerun `make test`.
lock:
	PYTHON=$(PYTHON) bash scripts/lock.sh

# The golden and parity tests in a second venv with the newest versions pip resolves (slow half runs it too).
drift: $(VENV)/.installed-test
	$(BIN)/python scripts/drift_check.py

clean:
	rm -rf $(VENV) build dist site *.egg-info .test-fast.log .test-slow.log
