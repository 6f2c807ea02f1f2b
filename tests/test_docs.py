"""The documentation: the site builds with `mkdocs build --strict`, the README stays short.

The strict build fails on any warning: a broken link or anchor between pages, a page missing
from the nav, a docstring the numpy parser cannot read. It runs in CI through `make test`
(the `test` extra installs the `docs` extra); without mkdocs it is skipped, saying so, unless
ROBUSTLAB_TEST_DOCS_REQUIRED=1 (set by .ci/run) makes that a failure.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MKDOCS_YML = ROOT / "mkdocs.yml"
#: The issue's limit on the README (12 KB).
README_MAX_BYTES = 12 * 1024
#: Modules the documentation build needs (the `docs` extra).
DOCS_MODULES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "griffe")


def _missing_docs_modules() -> list[str]:
    missing = []
    for name in DOCS_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


def require_docs_tools() -> None:
    missing = _missing_docs_modules()
    if not missing:
        return
    message = (f"the documentation tools are not installed ({', '.join(missing)} missing): "
               "pip install -e '.[docs]'")
    if os.environ.get("ROBUSTLAB_TEST_DOCS_REQUIRED") == "1":
        pytest.fail(message + " (ROBUSTLAB_TEST_DOCS_REQUIRED=1)")
    pytest.skip(message)


def nav_pages() -> list[str]:
    """The Markdown files named in mkdocs.yml's nav."""
    text = MKDOCS_YML.read_text()
    nav = text[text.index("\nnav:"):]
    return re.findall(r":\s*([\w./-]+\.md)\s*$", nav, flags=re.MULTILINE)


# --- fast -------------------------------------------------------------------------------------


def test_readme_is_at_most_12_kb_and_keeps_the_two_commands():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move reference material to docs/"
    text = README.read_text()
    assert re.search(r"^make demo\b", text, flags=re.MULTILINE)
    assert re.search(r"^make test\b", text, flags=re.MULTILINE)
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, flags=re.MULTILINE) and re.search(r"^test:", makefile, flags=re.MULTILINE)


def test_readme_links_point_at_files_that_exist():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert local, "the README links to the documentation"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_every_page_in_the_nav_exists_and_every_page_is_in_the_nav():
    pages = nav_pages()
    assert "index.md" in pages and "api/robustlab.engine.md" in pages
    missing = [p for p in pages if not (ROOT / "docs" / p).is_file()]
    assert not missing, f"mkdocs.yml names pages that do not exist: {missing}"
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk - set(pages) == set(), f"pages missing from the nav: {sorted(on_disk - set(pages))}"


def _docstring_extension():
    if importlib.util.find_spec("griffe") is None:
        require_docs_tools()
    spec = importlib.util.spec_from_file_location("griffe_docstrings", ROOT / "scripts" / "griffe_docstrings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docstring_extension_turns_roles_into_code_and_fences_free_doctests():
    ext = _docstring_extension()
    text = ("See :func:`robustlab.evaluate` and :class:`~robustlab.store.Store` (:meth:`.verify`).\n"
            "\n"
            ">>> import robustlab\n"
            ">>> robustlab.evaluate(\"demo:cnn\", \"corrupted\", \"scenes/\")\n"
            "\n"
            "Examples\n"
            "--------\n"
            ">>> 1 + 1\n"
            "2\n")
    out = ext.markdown_docstring(text)
    assert "See `robustlab.evaluate` and `Store` (`verify`)." in out
    assert ":func:" not in out and ":class:" not in out
    fenced = out.split("```pycon\n", 1)[1].split("```", 1)[0]
    assert fenced.splitlines() == [">>> import robustlab", '>>> robustlab.evaluate("demo:cnn", "corrupted", "scenes/")']
    # the Examples section is left to the numpy parser: not fenced a second time
    assert out.count("```pycon") == 1 and out.rstrip().endswith(">>> 1 + 1\n2")


# --- slow: the whole site -------------------------------------------------------------------


@pytest.mark.slow
def test_docs_build_strictly(tmp_path):
    require_docs_tools()
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(MKDOCS_YML),
                           "--site-dir", str(site)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log[-6000:]}"
    for page in nav_pages():
        html = site / "index.html" if page == "index.md" else site / page[:-3] / "index.html"
        assert html.is_file(), f"{page} was not built ({html})"
    engine = (site / "api" / "robustlab.engine" / "index.html").read_text()
    # the API reference is generated from the docstrings, Markdown-rendered
    assert 'id="robustlab.engine.register_benchmark"' in engine
    assert "Subclass" in engine and ":class:" not in engine
    assert '<span class="gp">&gt;&gt;&gt;' in engine and "<blockquote>" not in engine   # doctests as code, not quotes
    start = (site / "getting-started" / "index.html").read_text()
    assert "make demo" in start and "images/report.png" in start
