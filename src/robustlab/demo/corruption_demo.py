"""Interim ``robustlab demo``: every corruption at every severity on bundled images.

Takes photographs bundled with scikit-image (astronaut, chelsea, coffee; no download), applies
all registered corruptions at severities 1..5, and writes into ``out``:

- ``contact_<image>.png``: a grid, one row per corruption, columns clean + severities 1..5;
- ``index.html``: a self-contained page (images embedded) with the grids and the timing table;
- ``timings.json``: seconds per (image, corruption, severity).

``quick`` uses one 224x224 image (a few seconds). Timings are single-process wall times of
:func:`robustlab.corruptions.corrupt`, after one warm-up call per corruption (numba compiles).
"""

from __future__ import annotations

import base64
import io
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..corruptions import corrupt, get_corruption, list_corruptions
from ..corruptions.items import item_random_state
from ..fsutil import atomic_write_bytes, atomic_write_text, ensure_dir

#: scikit-image bundled images used by the full demo (names of ``skimage.data`` functions).
DEMO_IMAGES = ("astronaut", "chelsea", "coffee")
SEVERITIES = (1, 2, 3, 4, 5)
#: Side of the single image of ``--quick`` (the ImageNet-C size).
QUICK_SIZE = 224
#: Height of one thumbnail in the contact sheet (pixels).
THUMB_HEIGHT = 128


@dataclass
class DemoResult:
    """Where the demo wrote its files and what it measured."""

    out_dir: Path
    #: image name -> (height, width)
    image_sizes: dict[str, tuple[int, int]]
    corruptions: list[str]
    #: (image, corruption, severity) -> seconds of one corrupt() call
    seconds: dict[tuple[str, str, int], float] = field(default_factory=dict)
    sheets: list[Path] = field(default_factory=list)
    html: Path | None = None

    def mean_ms(self, corruption: str, severity: int | None = None) -> float:
        """Mean milliseconds per image of ``corruption`` (at ``severity``, or summed over 1..5)."""
        per_image = [sum(self.seconds[(img, corruption, s)] for s in
                         ([severity] if severity else SEVERITIES)) for img in self.image_sizes]
        return 1000 * float(np.mean(per_image))

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds.values()))


def demo_images(quick: bool = False) -> dict[str, np.ndarray]:
    """The demo's images as uint8 HxWx3: three bundled photos, or one 224x224 crop when ``quick``."""
    import skimage.data

    if quick:
        img = skimage.data.astronaut()
        side = min(img.shape[:2])
        pil = Image.fromarray(img[:side, :side]).resize((QUICK_SIZE, QUICK_SIZE), Image.Resampling.BILINEAR)
        return {"astronaut": np.asarray(pil)}
    return {name: np.ascontiguousarray(getattr(skimage.data, name)()[..., :3]) for name in DEMO_IMAGES}


def corrupt_all(images: dict[str, np.ndarray], names: list[str], seed: int = 0
                ) -> tuple[dict[tuple[str, str, int], np.ndarray], dict[tuple[str, str, int], float]]:
    """Every (image, corruption, severity): the output and the seconds it took."""
    warm = np.full((40, 40, 3), 128, np.uint8)
    for name in names:  # numba kernels compile on their first call; keep that out of the timings
        corrupt(warm, name, 1, rng=0)
    outputs, seconds = {}, {}
    for img_name, img in images.items():
        for name in names:
            for s in SEVERITIES:
                rng = item_random_state(seed, img_name, name, s)
                t0 = time.perf_counter()
                outputs[(img_name, name, s)] = corrupt(img, name, s, rng=rng)
                seconds[(img_name, name, s)] = time.perf_counter() - t0
    return outputs, seconds


def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # pragma: no cover - Pillow < 10.1 has only the fixed bitmap font
        return ImageFont.load_default()


def _thumb(img: np.ndarray, height: int) -> Image.Image:
    h, w = img.shape[:2]
    return Image.fromarray(img).resize((max(1, round(w * height / h)), height), Image.Resampling.BILINEAR)


def contact_sheet(clean: np.ndarray, outputs: dict[tuple[str, int], np.ndarray], names: list[str],
                  thumb_height: int = THUMB_HEIGHT) -> np.ndarray:
    """A labelled grid: one row per corruption; columns clean, severity 1..5.

    Parameters
    ----------
    clean : uint8 HxWx3
    outputs : {(corruption, severity): uint8 HxWx3}
    names : corruption names, in row order

    Returns
    -------
    np.ndarray
        uint8 image, (header + rows * (thumb_height + gap)) x (label + 6 * (thumb width + gap)) x 3.
    """
    gap, label_w, header_h = 4, 150, 24
    tw = _thumb(clean, thumb_height).width
    width = label_w + (1 + len(SEVERITIES)) * (tw + gap)
    height = header_h + len(names) * (thumb_height + gap)
    sheet = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(sheet)
    font = _font(14)
    for col, title in enumerate(["clean", *(f"severity {s}" for s in SEVERITIES)]):
        draw.text((label_w + col * (tw + gap) + 4, 4), title, fill="black", font=font)
    clean_thumb = _thumb(clean, thumb_height)
    for row, name in enumerate(names):
        y = header_h + row * (thumb_height + gap)
        draw.text((4, y + thumb_height // 2 - 8), name, fill="black", font=font)
        sheet.paste(clean_thumb, (label_w, y))
        for col, s in enumerate(SEVERITIES, start=1):
            sheet.paste(_thumb(outputs[(name, s)], thumb_height), (label_w + col * (tw + gap), y))
    return np.asarray(sheet)


def _encode(img: np.ndarray, fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buf.getvalue()


_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>robustlab: common corruptions</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:1em 0}td,th{padding:.2em .7em;text-align:right;border-bottom:1px solid #ddd}
td:first-child,th:first-child{text-align:left}img{max-width:100%;border:1px solid #ccc}
.note{color:#666}
</style></head><body>
<h1>robustlab: the {{ corruptions|length }} common corruptions</h1>
<p>Each row is a corruption (ImageNet-C, profile <code>imagecorruptions</code>); columns are the clean image and
severities 1 to 5. Images bundled with scikit-image: {{ sizes }}.</p>
<h2>Time per image (ms, one core)</h2>
<table><tr><th>corruption</th><th>group</th>{% for s in severities %}<th>sev {{ s }}</th>{% endfor %}<th>all 5</th></tr>
{% for row in rows %}<tr><td>{{ row.name }}</td><td>{{ row.group }}</td>{% for v in row.ms %}<td>{{ "%.1f"|format(v) }}</td>{% endfor %}<td><b>{{ "%.1f"|format(row.total) }}</b></td></tr>
{% endfor %}<tr><th>all</th><th></th>{% for s in severities %}<th></th>{% endfor %}<th>{{ "%.0f"|format(total_ms) }}</th></tr></table>
<p class="note">Mean wall time of one <code>corrupt()</code> call per image, measured on this machine in one process.</p>
{% for sheet in sheets %}<h2>{{ sheet.name }} ({{ sheet.size }})</h2>
<img alt="{{ sheet.name }}: all corruptions at severities 1-5" src="data:image/jpeg;base64,{{ sheet.data }}">
{% endfor %}
</body></html>
"""


def render_html(result: DemoResult, sheet_jpegs: dict[str, bytes]) -> str:
    """The self-contained demo page (contact sheets embedded as JPEG data URIs; the PNG files
    next to it are the lossless versions)."""
    import jinja2

    rows = [{"name": n, "group": get_corruption(n).group, "ms": [result.mean_ms(n, s) for s in SEVERITIES],
             "total": result.mean_ms(n)} for n in result.corruptions]
    sheets = [{"name": name, "size": "x".join(map(str, result.image_sizes[name])),
               "data": base64.b64encode(data).decode("ascii")} for name, data in sheet_jpegs.items()]
    sizes = ", ".join(f"{n} {h}x{w}" for n, (h, w) in result.image_sizes.items())
    env = jinja2.Environment(autoescape=True)
    return env.from_string(_HTML).render(corruptions=result.corruptions, severities=SEVERITIES, rows=rows,
                                         sheets=sheets, sizes=sizes, total_ms=sum(r["total"] for r in rows))


def run_demo(out: str | os.PathLike = "robustlab-demo", *, quick: bool = False, seed: int = 0) -> DemoResult:
    """Run every corruption at every severity on the demo images and write the sheets and page."""
    out_dir = ensure_dir(out)
    images = demo_images(quick)
    names = list_corruptions("all")
    outputs, seconds = corrupt_all(images, names, seed)
    result = DemoResult(out_dir, {k: v.shape[:2] for k, v in images.items()}, names, seconds)
    jpegs = {}
    for img_name, img in images.items():
        sheet = contact_sheet(img, {(n, s): outputs[(img_name, n, s)] for n in names for s in SEVERITIES}, names)
        jpegs[img_name] = _encode(sheet, "JPEG")
        result.sheets.append(atomic_write_bytes(out_dir / f"contact_{img_name}.png", _encode(sheet, "PNG")))
    timings = [{"image": i, "corruption": c, "severity": s, "seconds": t} for (i, c, s), t in seconds.items()]
    atomic_write_text(out_dir / "timings.json", json.dumps(timings, indent=1))
    result.html = atomic_write_text(out_dir / "index.html", render_html(result, jpegs))
    return result


def print_report(result: DemoResult, console=None) -> None:
    """Print the timing table and where the files are."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    sizes = ", ".join(f"{n} {h}x{w}" for n, (h, w) in result.image_sizes.items())
    table = Table(title=f"ms per image, one core ({sizes})")
    table.add_column("corruption")
    for s in SEVERITIES:
        table.add_column(f"sev {s}", justify="right")
    table.add_column("all 5", justify="right", style="bold")
    for n in result.corruptions:
        table.add_row(n, *(f"{result.mean_ms(n, s):.1f}" for s in SEVERITIES), f"{result.mean_ms(n):.1f}")
    console.print(table)
    console.print(f"{len(result.corruptions)} corruptions x {len(SEVERITIES)} severities x "
                  f"{len(result.image_sizes)} image(s) in {result.total_seconds:.1f} s")
    for sheet in result.sheets:
        console.print(f"contact sheet: {sheet}")
    console.print(f"page: {result.html}")
