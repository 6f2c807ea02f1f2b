"""Figures of the report as self-contained SVG strings (matplotlib, no network, no fonts fetched).

Each function takes plain data (never a store) and returns an :class:`Figure`; the HTML
embeds the SVG inline. Axis labels carry units; legends name models.

Layout rules, applied to every figure by :func:`figure_svg` (also to the figures that section
modules draw themselves): a legend never sits over the plotted data (one inside the axes is
moved above them, in as many columns as fit), and every plotted artist is tagged with an SVG
id starting with :data:`DATA_GID` so a browser test can check that no text covers data.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


def pyplot():
    """matplotlib's pyplot as the report draws with it: the Agg backend, text as SVG paths, 9 pt, no top
    or right spines, a fixed SVG hash salt (byte-identical SVG for the same figure). Imported on first
    use, so that reading results (``robustlab show``) never imports matplotlib; every module that draws
    gets pyplot here."""
    import matplotlib

    if not getattr(pyplot, "ready", False):
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plt.rcParams.update({"svg.fonttype": "path", "font.size": 9, "axes.spines.top": False,
                             "axes.spines.right": False, "figure.dpi": 100, "svg.hashsalt": "robustlab"})
        pyplot.ready = True  # type: ignore[attr-defined]
    import matplotlib.pyplot as plt

    return plt

#: Prefix of the SVG id of every plotted (data) artist; text must not cover these.
DATA_GID = "rl-data"
#: Legend text size (points).
LEGEND_FONT_SIZE = 8
#: A figure wider than this (CSS pixels at its natural size) gets a whole row of the report, so
#: it is shown unscaled and its text stays readable on a 1280 px wide screen.
WIDE_FIGURE_PX = 560


@dataclass(frozen=True)
class Figure:
    """A rendered figure: an id, a title, a caption and SVG (or PNG data-URI) content."""

    key: str
    title: str
    caption: str
    svg: str = ""
    png_data_uri: str = ""

    @property
    def width_px(self) -> float | None:
        """Natural width in CSS pixels (SVG ``pt`` x 4/3), or None for a PNG figure."""
        match = re.search(r'<svg[^>]*\swidth="([0-9.]+)pt"', self.svg)
        return float(match.group(1)) * 4 / 3 if match else None

    @property
    def wide(self) -> bool:
        """True when the figure needs a whole report row to be shown unscaled."""
        width = self.width_px
        return width is not None and width > WIDE_FIGURE_PX


def tag_data_artists(fig) -> None:
    """Give every plotted artist (bars, lines, markers, bands, error bars) an SVG id
    ``rl-data-<axes>-<n>`` unless it already has one."""
    for a, ax in enumerate(fig.axes):
        artists = [*ax.patches, *ax.lines, *ax.collections, *ax.images]
        for n, artist in enumerate(artists):
            if artist.get_gid() is None:
                artist.set_gid(f"{DATA_GID}-{a}-{n}")


def legend_above(ax, handles: Sequence | None = None, labels: Sequence[str] | None = None, *,
                 fontsize: float = LEGEND_FONT_SIZE):
    """A frameless legend just above the axes (never over the data), in as many columns as fit
    the axes' width. ``handles``/``labels`` default to the axes' labelled artists."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    room = ax.get_window_extent(renderer).width
    legend = None
    for ncols in range(len(handles), 0, -1):
        if legend is not None:
            legend.remove()
        legend = ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0.0, 1.02), ncols=ncols,
                           frameon=False, fontsize=fontsize, borderaxespad=0.0, handlelength=1.6,
                           columnspacing=1.4)
        if legend.get_window_extent(renderer).width <= room:
            break
    return legend


def move_legends_off_data(fig) -> None:
    """Move every legend that overlaps its axes' plotting area above the axes (see :func:`legend_above`)."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        if not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer)):
            continue
        texts = legend.get_texts()
        handles, labels = list(legend.legend_handles), [t.get_text() for t in texts]
        fontsize = texts[0].get_fontsize() if texts else LEGEND_FONT_SIZE
        legend.remove()
        legend_above(ax, handles, labels, fontsize=max(fontsize, LEGEND_FONT_SIZE))


def label_points(ax, xs: Sequence[float], ys: Sequence[float], texts: Sequence[str], *, fontsize: float = 6.5,
                 color: str = "0.3", pad: float = 3.0, marker_radius: float = 3.5) -> list:
    """Name scatter points without covering other labels or points.

    Each label goes to the first of eight spots around its point (right, upper right, above,
    upper left, left, ...) where it overlaps no label placed before, no marker and no line
    of the axes (nor any point of a scatter drawn on them), and stays inside the axes; a label
    with no free spot is left out (its point is still drawn) so nothing is hidden under text;
    the caller names those in the caption.

    Parameters
    ----------
    ax : matplotlib Axes
    xs, ys : data coordinates of the points (same units as the axes)
    texts : one label per point
    fontsize : points
    pad : gap between point and label, points
    marker_radius : half the size of the labelled points' markers, points

    Returns
    -------
    list of str
        The texts that found no free spot (not drawn).
    """
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    to_px = ax.transData.transform
    scale = fig.dpi / 72.0
    marker = marker_radius * scale
    points = np.array([to_px((x, y)) for x, y in zip(xs, ys)]) if len(xs) else np.zeros((0, 2))
    taken = [(p[0] - marker, p[1] - marker, p[0] + marker, p[1] + marker) for p in points]
    from matplotlib.collections import PathCollection

    for scatter in ax.collections:  # the points of scatter plots (reference models...) stay visible too
        if isinstance(scatter, PathCollection) and len(scatter.get_offsets()):
            radius = (np.sqrt(float(np.max(scatter.get_sizes()))) / 2 + 1) * scale if len(scatter.get_sizes()) else 3
            for px in scatter.get_offset_transform().transform(scatter.get_offsets()):
                taken.append((px[0] - radius, px[1] - radius, px[0] + radius, px[1] + radius))
    for line in ax.lines:  # sample drawn lines so labels avoid them too
        data = line.get_xydata()
        if len(data) >= 2 and line.get_linestyle() not in ("None", "none", ""):
            dense = np.concatenate([np.linspace(a, b, 12) for a, b in zip(data[:-1], data[1:])])
            for px in ax.transData.transform(dense):
                taken.append((px[0] - 1.5, px[1] - 1.5, px[0] + 1.5, px[1] + 1.5))
    inside = ax.get_window_extent(renderer)
    spots = [(1, 0, "left", "center"), (0.7, 0.7, "left", "bottom"), (0, 1, "center", "bottom"),
             (-0.7, 0.7, "right", "bottom"), (-1, 0, "right", "center"), (-0.7, -0.7, "right", "top"),
             (0, -1, "center", "top"), (0.7, -0.7, "left", "top")]

    def free(box) -> bool:
        if box.x0 < inside.x0 or box.x1 > inside.x1 or box.y0 < inside.y0 or box.y1 > inside.y1:
            return False
        return not any(box.x0 < b[2] and b[0] < box.x1 and box.y0 < b[3] and b[1] < box.y1 for b in taken)

    left_out = []
    for (x, y), text in zip(zip(xs, ys), texts):
        for dx, dy, ha, va in spots:
            label = ax.annotate(text, (x, y), xytext=(dx * (pad + 2), dy * (pad + 2)), textcoords="offset points",
                                fontsize=fontsize, color=color, ha=ha, va=va)
            box = label.get_window_extent(renderer)
            if free(box):
                taken.append((box.x0, box.y0, box.x1, box.y1))
                break
            label.remove()
        else:
            left_out.append(text)
    return left_out


def figure_svg(fig) -> str:
    """The figure as inline SVG (no XML prolog); applies the layout rules of the module docstring
    and closes the figure."""
    fig.canvas.draw()
    move_legends_off_data(fig)
    tag_data_artists(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": "robustlab"})
    pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog for inline use



def png_data_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=100, metadata={"Software": "robustlab"})
    pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def bar_groups(key: str, title: str, caption: str, categories: Sequence[str], series: Mapping[str, Sequence[float]],
               *, ylabel: str, reference: float | None = None, reference_label: str = "") -> Figure:
    """Grouped bars: one group per category, one bar per series (model)."""
    n_cat, n_ser = len(categories), max(1, len(series))
    # capped: a wider SVG is scaled down in its half-page slot and its labels become unreadable
    fig, ax = pyplot().subplots(figsize=(min(8.0, max(6.0, 0.45 * n_cat * max(1, n_ser) ** 0.5 + 2)), 3.4))
    width = 0.8 / n_ser
    x = np.arange(n_cat)
    for i, (name, values) in enumerate(series.items()):
        ax.bar(x + (i - (n_ser - 1) / 2) * width, values, width, label=name)
    if reference is not None:
        ax.axhline(reference, color="0.3", linestyle="--", linewidth=1, label=reference_label or None)
    ax.set_xticks(x, categories, rotation=45, ha="right")
    ax.set_ylabel(ylabel)
    legend_above(ax)
    return Figure(key, title, caption, svg=figure_svg(fig))


def lines(key: str, title: str, caption: str, x: Sequence[float] | Mapping[str, Sequence[float]],
          series: Mapping[str, Sequence[float]], *, xlabel: str, ylabel: str,
          bands: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
          ylim: tuple[float, float] | None = None, marker: str = "o") -> Figure:
    """One line per series; ``x`` shared or per series; optional shaded intervals."""
    fig, ax = pyplot().subplots(figsize=(5.6, 3.4))
    for name, ys in series.items():
        xs = x[name] if isinstance(x, Mapping) else x
        (line,) = ax.plot(xs, ys, marker=marker, markersize=3.5, linewidth=1.4, label=name)
        if bands and name in bands:
            lo, hi = bands[name]
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.grid(alpha=0.3)
    legend_above(ax)
    return Figure(key, title, caption, svg=figure_svg(fig))


def scatter_with_fit(key: str, title: str, caption: str, points: Mapping[str, tuple], *, xlabel: str, ylabel: str,
                     fit=None) -> Figure:
    """Original vs perturbed accuracy across models: points with interval bars, y = x, and a fit.

    ``points``: name -> (x, y, (x_low, x_high) or None, (y_low, y_high) or None), fractions.
    ``fit``: a :class:`robustlab.metrics.stats.LinearFit` (drawn with its confidence band).
    """
    fig, ax = pyplot().subplots(figsize=(4.8, 4.2))
    xs_all = []
    for name, (x, y, xi, yi) in points.items():
        xerr = None if xi is None or xi[0] is None else [[100 * (x - xi[0])], [100 * (xi[1] - x)]]
        yerr = None if yi is None or yi[0] is None else [[100 * (y - yi[0])], [100 * (yi[1] - y)]]
        ax.errorbar(100 * x, 100 * y, xerr=xerr, yerr=yerr, fmt="o", markersize=4, capsize=2, label=name)
        xs_all.append(x)
    lo, hi = (min(xs_all), max(xs_all)) if xs_all else (0, 1)
    grid = np.linspace(max(0.0, lo - 0.05), min(1.0, hi + 0.05), 50)
    ax.plot(100 * grid, 100 * grid, color="0.5", linestyle=":", linewidth=1, label="y = x (no drop)")
    if fit is not None:
        ax.plot(100 * grid, 100 * np.asarray(fit.predict(grid)), color="k", linewidth=1,
                label=f"least-squares fit (slope {fit.slope:.2f})")
        band_lo, band_hi = fit.band(grid)
        ax.fill_between(100 * grid, 100 * np.asarray(band_lo), 100 * np.asarray(band_hi), color="k", alpha=0.1,
                        linewidth=0, label=f"{100 * (1 - fit.alpha):.0f}% confidence band")
    low, high = ax.get_ylim()  # a wide band (few models) must not squeeze the points: accuracies are 0-100 %
    ax.set_ylim(max(low, -2.0), min(high, 102.0))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    legend_above(ax)
    return Figure(key, title, caption, svg=figure_svg(fig))


def image_grid(key: str, title: str, caption: str, images: Sequence[Sequence[np.ndarray]], *,
               row_labels: Sequence[str], col_labels: Sequence[str],
               cell_labels: Sequence[Sequence[str]] | None = None) -> Figure:
    """A grid of uint8 HxWx3 images (rows x columns) as an embedded PNG; ``cell_labels`` (per row,
    per image) are written under each image, where rows differ (e.g. each row's own frame numbers)."""
    rows, cols = len(images), max(len(r) for r in images)
    fig, axes = pyplot().subplots(rows, cols, figsize=(1.25 * cols + 1.2, (1.45 if cell_labels else 1.25) * rows + 0.3),
                             squeeze=False)
    for r in range(rows):
        for c in range(cols):
            ax = axes[r][c]
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
            if c < len(images[r]):
                ax.imshow(images[r][c], interpolation="nearest")
                if cell_labels is not None and c < len(cell_labels[r]):
                    ax.set_xlabel(cell_labels[r][c], fontsize=6, labelpad=1)
            if r == 0 and c < len(col_labels):
                ax.set_title(col_labels[c], fontsize=7)
            if c == 0 and r < len(row_labels):
                ax.set_ylabel(row_labels[r], fontsize=7, rotation=0, ha="right", va="center")
    return Figure(key, title, caption, png_data_uri=png_data_uri(fig))


#: Colours of :func:`difference_bars` by what the interval says.
DIFFERENCE_COLOURS = {"lower": "#2a7ab0", "higher": "#d1495b", "unclear": "#a9b1ba"}


def difference_bars(key: str, title: str, caption: str, categories: Sequence[str], differences: Sequence[float],
                    intervals: Sequence[tuple[float | None, float | None]], verdicts: Sequence[str], *,
                    ylabel: str, legend_labels: Mapping[str, str]) -> Figure:
    """One bar per category: a signed difference with its interval, coloured by the interval's verdict.

    Parameters
    ----------
    categories : names on the x axis
    differences : values in the plotted unit (e.g. percentage points)
    intervals : (low, high) per category in the same unit, or (None, None) for none
    verdicts : ``lower``, ``higher`` or ``unclear`` per category (see :data:`DIFFERENCE_COLOURS`)
    legend_labels : what each verdict means, for the legend (only verdicts present are listed)
    """
    from matplotlib.patches import Patch

    n_cat = len(categories)
    fig, ax = pyplot().subplots(figsize=(min(8.0, max(5.6, 0.36 * n_cat + 1.6)), 3.4))
    x = np.arange(n_cat)
    ax.bar(x, differences, 0.7, color=[DIFFERENCE_COLOURS[v] for v in verdicts])
    lows = np.array([np.nan if lo is None else lo for lo, _ in intervals], dtype=float)
    highs = np.array([np.nan if hi is None else hi for _, hi in intervals], dtype=float)
    has = ~np.isnan(lows) & ~np.isnan(highs)
    if has.any():
        vals = np.asarray(differences, dtype=float)
        ax.errorbar(x[has], vals[has], yerr=[vals[has] - lows[has], highs[has] - vals[has]], fmt="none",
                    ecolor="0.2", elinewidth=1, capsize=2)
    ax.axhline(0, color="0.3", linewidth=0.8)
    ax.set_xticks(x, categories, rotation=45, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    present = [v for v in DIFFERENCE_COLOURS if v in set(verdicts)]
    legend_above(ax, [Patch(color=DIFFERENCE_COLOURS[v]) for v in present], [legend_labels[v] for v in present])
    return Figure(key, title, caption, svg=figure_svg(fig))
