"""Griffe extension used by the API reference (mkdocs.yml): render robustlab's docstrings as Markdown.

robustlab's docstrings are numpydoc with two reStructuredText habits that Markdown does not
know: cross-reference roles (``:func:`robustlab.evaluate```, ``:class:`~robustlab.store.Store```)
and doctest examples in free text (``>>> ...`` lines, which Markdown reads as nested quotes).
This extension rewrites, before the docstrings are parsed:

- a role as inline code of its target (``~`` keeps the last component, as Sphinx does);
- a run of doctest lines outside an ``Examples`` section as a fenced ``pycon`` block
  (``Examples`` sections are already rendered as code by the numpy parser).

Only the rendered text changes; the docstrings in the sources stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

#: A reStructuredText cross-reference role: ``:func:`name```, ``:py:class:`~a.B```, ``:meth:`.x```.
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|ref|term):`(~?)([^`]+?)`")
#: A numpydoc section underline.
UNDERLINE = re.compile(r"-{3,}")


def _role_as_code(match: re.Match[str]) -> str:
    target = match.group(2).strip().lstrip(".")
    if match.group(1):
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def markdown_docstring(text: str) -> str:
    """The docstring ``text`` with roles as inline code and free-text doctests fenced."""
    text = ROLE.sub(_role_as_code, text)
    lines = text.split("\n")
    out: list[str] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() and i + 1 < len(lines) and UNDERLINE.fullmatch(lines[i + 1].strip()):
            section = line.strip().lower()
        if line.startswith(">>>") and section != "examples":
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["", "```pycon", *block, "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class MarkdownDocstrings(Extension):
    """Rewrite every docstring with :func:`markdown_docstring` as soon as its object exists."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        docstring = getattr(obj, "docstring", None)
        if docstring is not None and docstring.value:
            docstring.value = markdown_docstring(docstring.value)
