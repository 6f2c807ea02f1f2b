"""Example images for the report: what a corruption looks like at each severity.

The images come from the run's own data, as its benchmark shows them
(:meth:`robustlab.engine.Benchmark.example`): for ``corrupted`` the first image of the folder,
corrupted with the run's seed and profile exactly as the run saw it; for ``imagenet-c`` the
first file of each stored ``<corruption>/<severity>`` folder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import RobustlabError
from . import figures as F

MAX_CORRUPTIONS = 19
THUMB = 96


def thumbnail(img: np.ndarray) -> np.ndarray:
    from PIL import Image

    h, w = img.shape[:2]
    scale = THUMB / max(h, w)
    if scale >= 1:
        return img
    return np.asarray(Image.fromarray(img).resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.BILINEAR))


def corruption_examples(result) -> F.Figure | None:
    """A corruption x severity grid for one run (with a clean column when its benchmark shows one),
    or None when its benchmark shows no examples or its data is not readable here."""
    from ..engine.setting import Setting
    from .section_base import benchmark_of, run_config

    bench, cfg = benchmark_of(result), run_config(result)
    if bench is None or cfg is None:
        return None
    corruptions = list(getattr(cfg, "corruptions", None) or [])[:MAX_CORRUPTIONS]
    severities = list(getattr(cfg, "severities", None) or [1, 2, 3, 4, 5])
    root = Path(cfg.data or "")
    rows: list[list[np.ndarray]] = []
    try:
        clean = bench.example(cfg, Setting("clean"))
        for c in corruptions:
            row = [] if clean is None else [thumbnail(clean)]
            for s in severities:
                image = bench.example(cfg, Setting(c, int(s)))
                if image is None:
                    return None
                row.append(thumbnail(image))
            rows.append(row)
    except (RobustlabError, OSError, KeyError, TypeError, ValueError):  # data not here, or another version's run
        return None
    if not rows:
        return None
    cols = (["clean"] if clean is not None else []) + [f"severity {s}" for s in severities]
    return F.image_grid("corruption-examples", "Examples: corruption x severity",
                        f"The first image of {root.name or root} under each corruption and severity, as the run "
                        f"{result.run_id[:10]} evaluated it.", rows, row_labels=corruptions, col_labels=cols)
