"""Turn sampled candidates plus human reviews into a pm-k set (``pmsets.json`` + ``labels.json``).

Decision rules (SPEC section 5, as the ImageNet-Vid-Robust and YTBB-Robust authors did it):

- Each (anchor, frame) pair is decided by the annotators of its latest round: when any round-2
  record covers the pair, round 1 is ignored for it. An annotator answering a pair twice in
  the same round counts once, with their last answer (:func:`decide_pairs`); :func:`finalize`
  refuses such duplicates instead, with their count (e.g. a folder that holds both the review
  app's download and its own export).
- A pair is *similar* only when a strict majority of those annotators said "similar", and
  *correctly labelled* only when a strict majority said "yes".
- A neighbour is kept when similar and correctly labelled; unreviewed candidates are dropped.
- An anchor is dropped when its own review (``frame == anchor``) does not find its label
  correct by strict majority (or, with ``require_anchor_review``, when it has no review).
- Added labels (weakly labelled sources) are accepted when a strict majority of the pair's
  annotators added them; an anchor's accepted additions apply to all its kept frames.

The set is written in the ImageNet-Vid-Robust format, so :func:`read_pmk_set` and the
``video-pmk`` benchmark read it: ``OUT/pmsets.json``, ``OUT/labels.json`` (keys relative to
``OUT``), and ``OUT/finalize_summary.json`` with what was dropped and why.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError
from ._io import write_json
from .review import ReviewRecord, read_reviews
from .sampling import read_manifest


@dataclass(frozen=True)
class PairDecision:
    """The outcome for one (anchor, frame) pair."""

    round: int
    annotators: int
    similar: bool
    label_correct: bool
    added_labels: tuple[int, ...]
    reasons: tuple[str, ...]


def _majority(count: int, total: int) -> bool:
    return 2 * count > total


def decide_pairs(records: Iterable[ReviewRecord]) -> dict[tuple[str, str], PairDecision]:
    """Apply the majority rules to review records, per (anchor, frame) pair."""
    latest: dict[tuple[str, str], dict[str, ReviewRecord]] = {}
    latest_round: dict[tuple[str, str], int] = {}
    for rec in records:
        pair = (rec.anchor, rec.frame)
        if rec.round < latest_round.get(pair, 0):
            continue
        if rec.round > latest_round.get(pair, 0):
            latest_round[pair], latest[pair] = rec.round, {}
        latest[pair][rec.annotator] = rec  # last answer of an annotator in a round wins
    decisions = {}
    for pair, by_annotator in latest.items():
        answers = list(by_annotator.values())
        n = len(answers)
        is_anchor = pair[0] == pair[1]
        similar = is_anchor or _majority(sum(r.similarity == "similar" for r in answers), n)
        label_ok = _majority(sum(r.label_correct == "yes" for r in answers), n)
        added = Counter(label for r in answers for label in r.added_labels)
        decisions[pair] = PairDecision(
            round=latest_round[pair], annotators=n, similar=similar, label_correct=label_ok,
            added_labels=tuple(sorted(lbl for lbl, c in added.items() if _majority(c, n))),
            reasons=tuple(sorted({r.reason for r in answers if r.reason})))
    return decisions


def _check_records_match(records: Sequence[ReviewRecord], candidates: dict[str, list[dict]],
                         manifest_path: Path) -> None:
    for rec in records:
        if rec.anchor not in candidates:
            raise DataError(f"{rec.source}: anchor {rec.anchor!r} is not an anchor of "
                            f"{manifest_path}; reviews must come from this folder's review tasks.")
        if rec.frame not in {f["key"] for f in candidates[rec.anchor]}:
            raise DataError(f"{rec.source}: frame {rec.frame!r} is not a candidate of anchor "
                            f"{rec.anchor!r} in {manifest_path}.")


def _check_no_duplicates(records: Sequence[ReviewRecord]) -> None:
    first: dict[tuple, ReviewRecord] = {}
    repeated: list[tuple[ReviewRecord, ReviewRecord]] = []
    for rec in records:
        key = (rec.annotator, rec.anchor, rec.frame, rec.round)
        if key in first:
            repeated.append((first[key], rec))
        else:
            first[key] = rec
    if repeated:
        a, b = repeated[0]
        raise DataError(f"{len(repeated)} review record(s) repeat an answer already given (the same annotator, "
                        f"pair and round), e.g. {a.annotator!r} round {a.round} on ({a.anchor}, {a.frame}) in "
                        f"{a.source or 'a record'} and again in {b.source or 'a record'}. Each answer must be "
                        "given once: remove the duplicate file (e.g. the review app's download beside its own "
                        "export) or the repeated lines.")


def _select(videos: dict[str, dict], decisions: dict[tuple[str, str], PairDecision], require_anchor_review: bool
            ) -> tuple[dict[str, list[str]], dict[str, list[int]], dict[str, str], Counter, list[str]]:
    """The pm-k sets the decisions keep: ``(pmsets, labels, dropped anchors with why, dropped
    neighbours per reason, anchors left without a label)``."""
    pmsets: dict[str, list[str]] = {}
    labels: dict[str, list[int]] = {}
    dropped_anchors: dict[str, str] = {}
    dropped_frames: Counter = Counter()
    unlabelled: list[str] = []
    for anchor, video in videos.items():
        own = decisions.get((anchor, anchor))
        if own is None and require_anchor_review:
            dropped_anchors[anchor] = "no anchor review"
            continue
        if own is not None and not own.label_correct:
            dropped_anchors[anchor] = "anchor mislabelled (no strict majority for a correct label)"
            continue
        anchor_labels = set(video.get("labels", [])) | set(own.added_labels if own else ())
        if not anchor_labels:
            unlabelled.append(anchor)
            continue
        pmsets[anchor] = _kept_neighbours(anchor, video["frames"], decisions, anchor_labels, labels, dropped_frames)
        labels[anchor] = sorted(anchor_labels)
    return pmsets, labels, dropped_anchors, dropped_frames, unlabelled


def _kept_neighbours(anchor: str, frames: list[dict], decisions: dict[tuple[str, str], PairDecision],
                     anchor_labels: set[int], labels: dict[str, list[int]], dropped: Counter) -> list[str]:
    """The keys of ``anchor``'s neighbours kept by their decisions, in offset order; each kept one's
    labels go to ``labels`` and each dropped one is counted in ``dropped`` by its reason."""
    kept = []
    for frame in sorted(frames, key=lambda f: f["offset"]):
        if frame["offset"] == 0:
            continue
        decision = decisions.get((anchor, frame["key"]))
        if decision is None:
            dropped["unreviewed"] += 1
        elif not decision.similar:
            dropped["dissimilar"] += 1
        elif not decision.label_correct:
            dropped["mislabelled"] += 1
        else:
            kept.append(frame["key"])
            labels[frame["key"]] = sorted(anchor_labels | set(decision.added_labels))
    return kept


def finalize(out_dir: str | os.PathLike,
             reviews: str | os.PathLike | Iterable[str | os.PathLike] | Sequence[ReviewRecord],
             *, require_anchor_review: bool = False, review: dict | None = None) -> dict:
    """Apply review decisions to a sampled folder and write the final pm-k set.

    Parameters
    ----------
    out_dir : path
        Folder written by :func:`robustlab.video.sampling.sample_videos`.
    reviews : path(s) or sequence of ReviewRecord
        JSON Lines review files, folders of ``*.jsonl``, or records already read.
    require_anchor_review : bool
        Drop anchors that have no review of their own (default: keep them; their label is
        the one given at sampling time).
    review : dict, optional
        What the review app knows of the review's state (an incomplete round, who finalized),
        kept as the summary's ``review``; the ``video-pmk`` benchmark reports its counts.

    Returns
    -------
    dict
        The summary also written to ``finalize_summary.json``: anchors and frames kept,
        anchors dropped (with reasons), neighbours dropped per reason, and
        ``pairs_unreviewed``: candidate pairs (not the anchors' own steps) without any review.

    Raises
    ------
    DataError
        Reviews naming anchors/frames not in the manifest (file and line given), the same
        answer given twice (annotator, pair and round; the count is given), or a kept frame
        with no class label (give labels at sampling time or add them in review).
    """
    out = Path(out_dir)
    manifest = read_manifest(out)
    manifest_path = out / "sample.json"
    videos = {v["anchor"]: v for v in manifest["videos"]}
    candidates = {a: v["frames"] for a, v in videos.items()}
    items = [reviews] if isinstance(reviews, (str, os.PathLike)) else list(reviews)
    records = (items if all(isinstance(r, ReviewRecord) for r in items)
               else read_reviews(items))
    _check_records_match(records, candidates, manifest_path)
    _check_no_duplicates(records)
    decisions = decide_pairs(records)

    pmsets, labels, dropped_anchors, dropped_frames, unlabelled = _select(videos, decisions, require_anchor_review)
    if unlabelled:
        raise DataError(f"{len(unlabelled)} anchor(s) in {manifest_path} have no class label, e.g. "
                        f"{unlabelled[:3]}: give labels when sampling (`robustlab video sample "
                        "--labels labels.json`) or add them in review (added_labels).")
    summary = {
        "anchors_sampled": len(videos), "anchors_kept": len(pmsets),
        "neighbours_kept": sum(map(len, pmsets.values())),
        "anchors_dropped": dropped_anchors, "neighbours_dropped": dict(dropped_frames),
        "review_records": len(records), "pairs_reviewed": len(decisions),
        "pairs_decided_in_round_2": sum(d.round == 2 for d in decisions.values()),
        "pairs_unreviewed": sum(1 for a, frames in candidates.items() for f in frames
                                if f["offset"] != 0 and (a, f["key"]) not in decisions),
        "pmsets": str(out / "pmsets.json"), "labels": str(out / "labels.json"),
    }
    if review is not None:
        summary["review"] = dict(review)
    write_json(out / "pmsets.json", pmsets)
    write_json(out / "labels.json", labels)
    write_json(out / "finalize_summary.json", summary)
    return summary


def format_summary(summary: dict) -> str:
    """Human-readable summary of :func:`finalize`."""
    dropped = ", ".join(f"{n} {why}" for why, n in sorted(summary["neighbours_dropped"].items()))
    lines = [f"kept {summary['anchors_kept']} of {summary['anchors_sampled']} anchors and "
             f"{summary['neighbours_kept']} neighbours" + (f" (dropped: {dropped})" if dropped else ""),
             f"{summary['review_records']} review records, {summary['pairs_reviewed']} pairs decided "
             f"({summary['pairs_decided_in_round_2']} in round 2)",
             f"wrote {summary['pmsets']} and {summary['labels']}"]
    for anchor, why in sorted(summary["anchors_dropped"].items()):
        lines.append(f"  dropped anchor {anchor}: {why}")
    if summary.get("pairs_unreviewed"):
        lines.append(f"{summary['pairs_unreviewed']} candidate pair(s) had no review and were dropped")
    return "\n".join(lines)
