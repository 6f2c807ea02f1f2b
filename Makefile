# The README's two commands:
#   make demo   set up .venv, install robustlab, run `robustlab demo`
#   make test   set up .venv with the test extras, run the whole test suite (fast + slow);
#               the slow part builds the documentation with `mkdocs build --strict` (tests/test_docs.py)
# Also: make docs (the site into site/), make docs-serve (read it while writing).
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
DEMO_OUT ?= robustlab-demo

.PHONY: demo test test-fast venv clean bench-corruptions parity-corruptions docs docs-serve

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e '.[docs]'
	touch $@ $(VENV)/.installed

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/robustlab demo --out $(DEMO_OUT)

# Whole suite: the fast default set, then the tests marked slow.
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 -m "not slow" tests
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m "slow" tests -p no:cacheprovider || test $$? -eq 5

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

clean:
	rm -rf $(VENV) build dist site *.egg-info
