"""The measured parity of the torch backend with the numpy path, as ``parity.json`` records it.

``perf/parity_torch.py --record`` writes ``parity.json`` beside this module: per corruption,
the bounds checked, the figures measured and the bounds missed. ``robustlab list`` shows the
outcome per corruption. Reading it needs no torch.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["PARITY_FILE", "load_parity", "parity_status"]

#: File name of the record, inside this package.
PARITY_FILE = "parity.json"


def load_parity() -> dict[str, Any]:
    """The recorded parity measurement (``{}`` when none is shipped)."""
    try:
        text = (resources.files(__package__) / PARITY_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return {}
    return json.loads(text)


#: The checks of a complete measurement (``measured`` in a record entry).
CHECKS = ("pixels", "classifier")


def parity_status(name: str, record: dict[str, Any] | None = None) -> str:
    """``"ok"``, ``"ok (pixels only)"``, ``"misses <bounds>"`` or ``"not measured"`` for ``name``."""
    record = load_parity() if record is None else record
    entry = record.get("corruptions", {}).get(name)
    if entry is None:
        return "not measured"
    if entry.get("ok"):
        measured = entry.get("measured", list(CHECKS))
        return "ok" if set(CHECKS) <= set(measured) else f"ok ({', '.join(measured)} only)"
    return "misses " + "; ".join(entry["missed"]) if entry.get("missed") else "misses its bound"
