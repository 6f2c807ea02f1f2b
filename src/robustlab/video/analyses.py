"""The analyses of the video-robustness paper, as plain functions on per-frame results.

Shankar et al. (*Do Image Classifiers Generalize Across Time?*) look at *where* models fail
between near-identical frames:

- :func:`error_frequency_by_offset`: how often a neighbour at offset d is misclassified when
  its anchor is classified correctly (errors grow with |d|, but are frequent even at +-1);
- :func:`accuracy_by_frame_type`: accuracy on I, P and B frames (compression artefacts differ);
- :func:`accuracy_by_fps`: anchor and pm-k accuracy per video frame rate;
- :func:`linf_distance_cdfs`: the CDF of the L-inf pixel distance between anchor and
  neighbour, for all candidate pairs, the reviewed (kept) pairs and the pairs a model gets
  wrong, showing that failures happen at small pixel distances.

The model-independent ("static") set of the same paper lives beside pm-k in
:func:`robustlab.metrics.pmk.static_frames`: per anchor, the neighbour within +-k that the most
models misclassify (ties: nearest, then pmsets list order; the anchor itself only when it has no
neighbour within k).

Inputs are the pm-k set (``pmsets``, ``labels``, ``label_mode`` as in
:mod:`robustlab.metrics.pmk`) and ``predictions`` ``{frame key: top-1 class}``. Frame types,
frame rates and candidate pairs of sets built with :func:`robustlab.video.sample_videos`
come from its manifest (:func:`manifest_frame_types`, :func:`manifest_fps`,
:func:`manifest_candidate_pairs`).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from ..data.images import check_image
from ..errors import InputError
from .keys import frame_offset
from .sampling import read_manifest

Pair = tuple[str, str]


def _labels_of(labels: Mapping, key: str) -> set[int]:
    if key not in labels:
        raise InputError(f"labels has no entry for frame {key!r}; every judged frame needs labels.")
    value = labels[key]
    return {int(value)} if isinstance(value, (int, np.integer)) else {int(v) for v in value}


def _prediction(predictions: Mapping, key: str) -> int:
    if key not in predictions:
        raise InputError(f"predictions has no entry for frame {key!r}; predict every frame of "
                         "the set.")
    return int(predictions[key])


def frame_correctness(predictions: Mapping[str, int], pmsets: Mapping[str, Sequence[str]],
                      labels: Mapping[str, object], label_mode: str = "frame") -> dict[str, bool]:
    """``{frame key: top-1 correct}`` for every anchor and neighbour.

    ``label_mode="anchor"`` judges neighbours against their anchor's labels (YTBB-Robust).
    A neighbour shared by two anchors in anchor mode is judged against the first anchor.
    """
    if label_mode not in ("frame", "anchor"):
        raise InputError(f"label_mode {label_mode!r} is unknown; use 'frame' or 'anchor'.")
    out: dict[str, bool] = {}
    for anchor, neighbours in pmsets.items():
        anchor_labels = _labels_of(labels, anchor)
        out[anchor] = _prediction(predictions, anchor) in anchor_labels
        for n in neighbours:
            judged = anchor_labels if label_mode == "anchor" else _labels_of(labels, n)
            out.setdefault(n, _prediction(predictions, n) in judged)
    return out


def error_frequency_by_offset(correct: Mapping[str, bool], pmsets: Mapping[str, Sequence[str]],
                              offsets: Mapping[str, Mapping[str, int]] | None = None
                              ) -> dict[int, dict[str, float]]:
    """Error rate of neighbours per signed offset, over anchors classified correctly.

    Parameters
    ----------
    correct : mapping of str to bool
        Per-frame correctness (:func:`frame_correctness`).
    pmsets : mapping
        ``{anchor: [neighbours]}``.
    offsets : mapping, optional
        ``{anchor: {neighbour: offset}}``; parsed from the keys when omitted.

    Returns
    -------
    dict of int to dict
        ``{offset: {"errors": n wrong, "frames": n judged, "rate": errors / frames}}``,
        sorted by offset; offsets with no neighbour are absent.
    """
    errors: dict[int, int] = defaultdict(int)
    frames: dict[int, int] = defaultdict(int)
    for anchor, neighbours in pmsets.items():
        if not correct[anchor]:
            continue
        for n in neighbours:
            d = offsets[anchor][n] if offsets is not None else frame_offset(anchor, n)
            frames[d] += 1
            errors[d] += not correct[n]
    return {d: {"errors": errors[d], "frames": frames[d], "rate": errors[d] / frames[d]}
            for d in sorted(frames)}


def _grouped_accuracy(correct: Mapping[str, bool], group_of: Mapping[str, object],
                      keys: Iterable[str]) -> dict[object, dict[str, float]]:
    hits: dict[object, int] = defaultdict(int)
    total: dict[object, int] = defaultdict(int)
    for key in keys:
        if key not in group_of:
            raise InputError(f"no group (frame type / fps) is known for frame {key!r}.")
        g = group_of[key]
        total[g] += 1
        hits[g] += bool(correct[key])
    return {g: {"correct": hits[g], "frames": total[g], "accuracy": hits[g] / total[g]}
            for g in sorted(total, key=str)}


def accuracy_by_frame_type(correct: Mapping[str, bool], frame_types: Mapping[str, str]
                           ) -> dict[str, dict[str, float]]:
    """Top-1 accuracy per picture type over every frame in ``correct``.

    Returns ``{"I" | "P" | "B" | ...: {"correct", "frames", "accuracy"}}``.
    """
    return _grouped_accuracy(correct, frame_types, correct)  # type: ignore[return-value]


def accuracy_by_fps(correct: Mapping[str, bool], pmsets: Mapping[str, Sequence[str]],
                    fps: Mapping[str, float], bins: Sequence[float] | None = None
                    ) -> dict[str, dict[str, float]]:
    """Anchor accuracy and pm-k accuracy (all neighbours) per frame rate.

    Parameters
    ----------
    fps : mapping of str to float
        Frame rate per anchor.
    bins : sequence of float, optional
        Bin edges (frames/s); groups are ``"lo-hi"`` for ``lo <= fps < hi``. Default: one
        group per distinct rate (rounded to 0.01).

    Returns
    -------
    dict
        ``{group: {"anchors", "accuracy_original", "accuracy_pmk"}}``.
    """
    def group(value: float) -> str:
        if bins is None:
            return f"{round(float(value), 2):g}"
        edges = list(bins)
        i = int(np.searchsorted(edges, value, side="right")) - 1
        if i < 0 or i >= len(edges) - 1:
            return f"<{edges[0]:g}" if i < 0 else f">={edges[-1]:g}"
        return f"{edges[i]:g}-{edges[i + 1]:g}"

    out: dict[str, dict[str, float]] = {}
    for anchor, neighbours in pmsets.items():
        if anchor not in fps:
            raise InputError(f"no frame rate is known for anchor {anchor!r}.")
        g = out.setdefault(group(fps[anchor]), {"anchors": 0, "_orig": 0, "_pmk": 0})
        g["anchors"] += 1
        g["_orig"] += bool(correct[anchor])
        g["_pmk"] += bool(correct[anchor]) and all(correct[n] for n in neighbours)
    return {k: {"anchors": v["anchors"], "accuracy_original": v["_orig"] / v["anchors"],
                "accuracy_pmk": v["_pmk"] / v["anchors"]} for k, v in sorted(out.items())}


def linf_distance(a: np.ndarray, b: np.ndarray) -> int:
    """L-inf distance between two uint8 HxWx3 images, in pixel units 0..255.

    Raises InputError when the shapes differ (frames of one video share a size).
    """
    a, b = check_image(a, name="anchor frame"), check_image(b, name="neighbour frame")
    if a.shape != b.shape:
        raise InputError(f"frames have different shapes {a.shape} and {b.shape}; L-inf distance "
                         "needs frames of the same video (same size).")
    return int(np.max(np.abs(a.astype(np.int16) - b.astype(np.int16))))


def pair_distances(pairs: Iterable[Pair], read_frame: Callable[[str], np.ndarray]
                   ) -> dict[Pair, int]:
    """L-inf distance of each (anchor, neighbour) pair; each frame is read once."""
    pairs = list(pairs)
    cache: dict[str, np.ndarray] = {}

    def get(key: str) -> np.ndarray:
        if key not in cache:
            cache[key] = read_frame(key)
        return cache[key]

    out = {}
    for anchor, neighbour in sorted(pairs):
        out[(anchor, neighbour)] = linf_distance(get(anchor), get(neighbour))
        if len(cache) > 64:  # pairs are sorted by anchor: older anchors are done
            cache = {anchor: cache[anchor]}
    return out


def empirical_cdf(values: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values x (float64) and F(x) = fraction of values <= x, each of shape (n,)."""
    x = np.sort(np.asarray(list(values), dtype=np.float64))
    if x.size == 0:
        return x, x.copy()
    # the fraction <= x counts ties fully: take the last position of each value
    f = np.searchsorted(x, x, side="right") / x.size
    return x, f


def mistake_pairs(correct: Mapping[str, bool], pmsets: Mapping[str, Sequence[str]]) -> list[Pair]:
    """(anchor, neighbour) pairs where the anchor is right and the neighbour wrong."""
    return [(a, n) for a, ns in pmsets.items() if correct[a] for n in ns if not correct[n]]


def linf_distance_cdfs(distances: Mapping[Pair, float], groups: Mapping[str, Iterable[Pair]]
                       ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Empirical CDFs of the L-inf distance for named groups of pairs.

    Typical groups: ``{"all pairs": candidates, "reviewed": kept pairs, "model mistakes":
    mistake_pairs(...)}``; every pair of a group must be in ``distances``.
    """
    out = {}
    for name, pairs in groups.items():
        pairs = list(pairs)
        missing = [p for p in pairs if p not in distances]
        if missing:
            raise InputError(f"group {name!r}: no distance for {len(missing)} pair(s), e.g. "
                             f"{missing[0]}; compute pair_distances over every group's pairs.")
        out[name] = empirical_cdf(distances[p] for p in pairs)
    return out


def plot_linf_cdfs(cdfs: Mapping[str, tuple[np.ndarray, np.ndarray]], ax=None):
    """Step plot of :func:`linf_distance_cdfs` output; returns the matplotlib Figure."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    if ax is None:
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
    else:
        fig = ax.figure
    for name, (x, f) in cdfs.items():
        if x.size:
            ax.step(np.r_[0, x], np.r_[0, f], where="post", label=f"{name} (n={x.size})")
    ax.set_xlabel("L-inf distance to anchor (0-255)")
    ax.set_ylabel("fraction of pairs")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


# --- manifest helpers for sets built by sample_videos -----------------------------------------


def manifest_frame_types(out_dir: str | os.PathLike) -> dict[str, str]:
    """``{frame key: picture type}`` of every sampled frame."""
    return {f["key"]: f["pict_type"] for v in read_manifest(out_dir)["videos"] for f in v["frames"]}


def manifest_fps(out_dir: str | os.PathLike) -> dict[str, float]:
    """``{anchor key: frames per second}`` (videos whose rate is unknown are left out)."""
    return {v["anchor"]: v["fps"] for v in read_manifest(out_dir)["videos"] if v.get("fps")}


def manifest_candidate_pairs(out_dir: str | os.PathLike) -> list[Pair]:
    """Every sampled (anchor, candidate) pair, before review."""
    return [(v["anchor"], f["key"]) for v in read_manifest(out_dir)["videos"]
            for f in v["frames"] if f["key"] != v["anchor"]]
