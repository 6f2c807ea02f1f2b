# The README's two commands:
#   make demo   set up .venv, install robustlab, run `robustlab demo`
#   make test   set up .venv with the test extras, run the whole test suite (fast + slow)
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
DEMO_OUT ?= robustlab-demo

.PHONY: demo test test-fast venv clean bench-corruptions parity-corruptions

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet -e '.[test]'
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

bench-corruptions: $(VENV)/.installed
	$(BIN)/python perf/speed_corruptions.py

parity-corruptions: $(VENV)/.installed
	$(BIN)/python perf/parity_corruptions.py

clean:
	rm -rf $(VENV) build dist *.egg-info
