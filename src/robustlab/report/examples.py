"""Example images for the report: what a corruption looks like at each severity.

The images come from the run's own data: for ``corrupted`` the first image of the folder,
corrupted with the run's seed and profile exactly as the run saw it; for ``imagenet-c`` the
first file of each stored ``<corruption>/<severity>`` folder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data.images import is_image_file, read_image
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


def _first_image(folder: Path) -> Path | None:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and is_image_file(path):
            return path
    return None


def corruption_examples(result) -> F.Figure | None:
    """A corruption x severity grid for one run, or None when its data is not readable here."""
    cfg = result.config
    corruptions = list(cfg.get("corruptions") or [])[:MAX_CORRUPTIONS]
    severities = list(cfg.get("severities") or [1, 2, 3, 4, 5])
    root = Path(cfg.get("data", ""))
    rows: list[list[np.ndarray]] = []
    try:
        if result.benchmark == "corrupted":
            from ..corruptions.views import corrupt_on_the_fly
            from ..data.classification import read_image_folder

            base = read_image_folder(root, cfg.get("class_map", "auto"), limit=cfg.get("limit")).subset(0, 1)
            if len(base) == 0:
                return None
            clean = base.read(0)
            for c in corruptions:
                rows.append([thumbnail(clean)] + [thumbnail(corrupt_on_the_fly(base, c, s, seed=cfg.get("seed", 0),
                                                                         profile=cfg.get("profile", "imagecorruptions")).read(0))
                                              for s in severities])
        elif result.benchmark == "imagenet-c" and cfg.get("layout") == "folders":
            for c in corruptions:
                row = []
                for s in severities:
                    first = _first_image(root / c / str(s))
                    if first is None:
                        return None
                    row.append(thumbnail(read_image(first)))
                rows.append(row)
        else:
            return None
    except (RobustlabError, OSError):
        return None
    if not rows:
        return None
    cols = (["clean"] if result.benchmark == "corrupted" else []) + [f"severity {s}" for s in severities]
    return F.image_grid("corruption-examples", "Examples: corruption x severity",
                        f"The first image of {root.name or root} under each corruption and severity, as the run "
                        f"{result.run_id[:10]} evaluated it.", rows, row_labels=corruptions, col_labels=cols)
