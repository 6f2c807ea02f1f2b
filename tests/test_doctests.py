"""The docstring examples run: every ``>>>`` example in src/robustlab is executed as a doctest (the
same as ``pytest --doctest-modules src/robustlab``), so an example that no longer works fails CI.
Examples that need data or a model the tests do not have are written as code blocks (``::``),
not as ``>>>`` lines."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
MODULES = sorted(
    ".".join(p.relative_to(SRC).with_suffix("").parts[:-1] if p.name == "__init__.py" else
             p.relative_to(SRC).with_suffix("").parts)
    for p in (SRC / "robustlab").rglob("*.py") if ">>> " in p.read_text(encoding="utf-8"))


def test_some_modules_have_examples():
    assert len(MODULES) >= 10, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} has '>>> ' text but no example the doctest finder runs"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} fail (see the output above)"


#: Documentation pages whose ``pycon`` blocks run as doctests (their examples need no data).
DOC_PAGES = ("effective-robustness.md",)
DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("page", DOC_PAGES)
def test_documentation_examples_pass(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```pycon\n")[1:]]
    assert blocks, f"docs/{page} has no pycon example"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for k, block in enumerate(blocks):
        runner.run(parser.get_doctest(block, {}, f"docs/{page}[{k}]", str(DOCS / page), 0))
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3 and result.failed == 0, f"{result.failed} examples of docs/{page} fail (see above)"
