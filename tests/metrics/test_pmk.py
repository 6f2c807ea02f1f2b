"""pm-k on the real ImageNet-Vid-Robust metadata (Shankar et al. 2021) and hand-made sets."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustlab.errors import InputError
from robustlab.metrics import (
    conditional_accuracy,
    frame_offsets,
    pairs_at_distance,
    parse_frame_key,
    per_class_accuracy,
    pmk_accuracy,
    pmk_accuracy_curve,
    pmset_pairs,
    static_accuracy,
    static_frames,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "metrics"


def _load(name):
    with gzip.open(FIXTURES / f"imagenet_vid_robust_{name}.json.gz", "rt") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def vid():
    return _load("pmsets"), _load("labels")


def all_correct(labels):
    return {k: v[0] for k, v in labels.items()}


def wrong_on(labels, frames):
    preds = all_correct(labels)
    for f in frames:
        preds[f] = (
            max(labels[f]) + 1 if max(labels[f]) < 29 else min(set(range(30)) - set(labels[f]))
        )
        assert preds[f] not in labels[f]
    return preds


# ---------------------------------------------------------------- invariants of the metadata


def test_metadata_invariants(vid):
    pmsets, labels = vid
    assert len(pmsets) == 1109
    assert sum(len(v) for v in pmsets.values()) == 21070
    assert len(labels) == 22179 == len(pmsets) + 21070
    assert sum(len(v) > 1 for v in labels.values()) == 1514
    sizes = [len(v) for v in pmsets.values()]
    assert min(sizes) == 0 and max(sizes) == 20
    offs = frame_offsets(pmsets)
    all_offsets = {o for row in offs.values() for o in row.values()}
    assert all_offsets == set(range(-10, 0)) | set(range(1, 11))
    assert all(0 <= c <= 29 for v in labels.values() for c in v)


def test_parse_frame_key():
    assert parse_frame_key("val/ILSVRC2015_val_00007011/000123.JPEG") == (
        "val/ILSVRC2015_val_00007011",
        123,
    )
    with pytest.raises(InputError, match="offsets="):
        parse_frame_key("frame_without_number.jpg")


# ---------------------------------------------------------------- real metadata


def test_all_correct_gives_100_100(vid):
    pmsets, labels = vid
    r = pmk_accuracy(all_correct(labels), pmsets, labels)
    assert r.accuracy_original == 1.0 and r.accuracy_pmk == 1.0 and r.drop == 0.0
    assert r.n_anchors == 1109 and r.n_neighbours == 21070
    assert all(v is None for v in r.breaking_frame.values())
    lo, hi = r.intervals()["accuracy_pmk"]
    assert hi == 1.0 and 0.99 < lo < 1.0


def test_wrong_on_chosen_frames_hand_computed(vid):
    pmsets, labels = vid
    anchors = list(pmsets)
    a0, a1, a2, a3 = anchors[0], anchors[1], anchors[2], anchors[3]
    # a0: anchor wrong. a1: one neighbour wrong, the farthest one. a2: two neighbours wrong.
    # a3: nothing wrong.
    offs = frame_offsets(pmsets)
    far1 = max(pmsets[a1], key=lambda n: abs(offs[a1][n]))
    near2 = min(pmsets[a2], key=lambda n: abs(offs[a2][n]))
    far2 = max(pmsets[a2], key=lambda n: abs(offs[a2][n]))
    preds = wrong_on(labels, [a0, far1, near2, far2])
    r = pmk_accuracy(preds, pmsets, labels)
    assert r.n_anchor_correct == 1108 and r.n_pmk_correct == 1106
    assert r.accuracy_original == pytest.approx(1108 / 1109)
    assert r.accuracy_pmk == pytest.approx(1106 / 1109)
    assert (
        r.breaking_frame[a0] == a0
        and r.breaking_frame[a1] == far1
        and r.breaking_frame[a2] == near2
    )
    assert r.breaking_frame[a3] is None
    assert r.anchor_correct[a1] and not r.pmk_correct[a1]
    # with k below a1's wrong offset, a1 survives
    k1 = abs(offs[a1][far1])
    assert pmk_accuracy(preds, pmsets, labels, k=k1 - 1).n_pmk_correct == 1107
    assert pmk_accuracy(preds, pmsets, labels, k=0).n_pmk_correct == 1108
    curve = pmk_accuracy_curve(preds, pmsets, labels)
    assert curve.ks == tuple(range(11))
    assert curve.n_pmk_correct[0] == 1108 and curve.n_pmk_correct[-1] == 1106
    k2 = abs(offs[a2][near2])
    for k in range(11):  # a0 always counts against; a1 from k1 on; a2 from k2 on
        assert curve.n_pmk_correct[k] == 1108 - (k >= k1) - (k >= k2)
    for k in (0, 3, 10):
        assert curve.n_pmk_correct[k] == pmk_accuracy(preds, pmsets, labels, k=k).n_pmk_correct


def test_multilabel_frames_accept_any_label(vid):
    pmsets, labels = vid
    multi = next(k for k, v in labels.items() if len(v) > 1 and k in pmsets)
    preds = all_correct(labels)
    preds[multi] = labels[multi][1]  # the second label is also correct
    assert pmk_accuracy(preds, pmsets, labels).n_anchor_correct == 1109


def test_reference_scoring_loop_agrees(vid):
    """Random predictions: compare with a direct loop written like the reference scorer."""
    pmsets, labels = vid
    rng = np.random.default_rng(3)
    preds = {
        k: (v[0] if rng.random() < 0.9 else int(rng.integers(0, 30))) for k, v in labels.items()
    }
    anchor_ok = pmk_ok = 0
    for a, nbs in pmsets.items():
        wrong = sum(preds[n] not in labels[n] for n in nbs)
        if preds[a] in labels[a]:
            anchor_ok += 1
            pmk_ok += wrong == 0
    r = pmk_accuracy(preds, pmsets, labels)
    assert (r.n_anchor_correct, r.n_pmk_correct) == (anchor_ok, pmk_ok)
    assert 0 < r.accuracy_pmk < r.accuracy_original < 1
    d = r.to_dict(per_anchor=True)
    json.dumps(d)
    assert len(d["breaking_frame"]) == 1109


def test_per_class_accuracy(vid):
    pmsets, labels = vid
    anchor = next(iter(pmsets))
    cls = labels[anchor][0]
    preds = wrong_on(labels, [anchor])
    per_class = per_class_accuracy(pmk_accuracy(preds, pmsets, labels), labels)
    n_cls = sum(cls in labels[a] for a in pmsets)
    assert per_class[cls].n_anchors == n_cls
    assert per_class[cls].accuracy_original == pytest.approx((n_cls - 1) / n_cls)
    assert sum(c.n_anchors for c in per_class.values()) == sum(len(labels[a]) for a in pmsets)
    assert all(c.accuracy_pmk == 1.0 for k, c in per_class.items() if k != cls)


# ---------------------------------------------------------------- small hand-made sets

V = "val/v1"
SETS = {
    f"{V}/000010.JPEG": [f"{V}/000009.JPEG", f"{V}/000011.JPEG", f"{V}/000013.JPEG"],
    f"{V}/000050.JPEG": [],
}
LABELS = {f"{V}/0000{i:02d}.JPEG": [1] for i in (9, 10, 11, 13, 50)}


def test_anchor_label_mode():
    labels = dict(LABELS)
    labels[f"{V}/000011.JPEG"] = [2]  # the neighbour's own label differs from the anchor's
    preds = {k: 1 for k in LABELS}
    assert pmk_accuracy(preds, SETS, labels, label_mode="anchor").n_pmk_correct == 2
    assert pmk_accuracy(preds, SETS, labels, label_mode="frame").n_pmk_correct == 1
    # anchor mode needs labels only for anchors
    anchors_only = {a: [1] for a in SETS}
    assert pmk_accuracy(preds, SETS, anchors_only, label_mode="anchor").accuracy_pmk == 1.0


def test_explicit_offsets_for_other_key_formats():
    sets = {"a": ["b", "c"]}
    labels = {"a": [0], "b": [0], "c": [0]}
    preds = {"a": 0, "b": 0, "c": 5}
    offsets = {"a": {"b": -1, "c": 4}}
    assert pmk_accuracy(preds, sets, labels, k=3, offsets=offsets).accuracy_pmk == 1.0
    assert pmk_accuracy(preds, sets, labels, k=4, offsets=offsets).accuracy_pmk == 0.0
    assert pmk_accuracy(preds, sets, labels).breaking_frame == {"a": "c"}  # k=None needs no offsets
    with pytest.raises(InputError, match="offsets="):
        pmk_accuracy(preds, sets, labels, k=3)


def test_static_set_and_accuracy():
    preds_a = {k: 1 for k in LABELS}
    preds_b = dict(preds_a)
    preds_a[f"{V}/000013.JPEG"] = 0
    preds_b[f"{V}/000013.JPEG"] = 0
    preds_b[f"{V}/000009.JPEG"] = 0
    frames = static_frames({"a": preds_a, "b": preds_b}, SETS, LABELS)
    assert frames == {
        f"{V}/000010.JPEG": f"{V}/000013.JPEG",
        f"{V}/000050.JPEG": f"{V}/000050.JPEG",
    }
    # with k=1 the frame-13 neighbour is out; 9 (one model wrong) is chosen over 11
    assert (
        static_frames({"a": preds_a, "b": preds_b}, SETS, LABELS, k=1)[f"{V}/000010.JPEG"]
        == f"{V}/000009.JPEG"
    )
    acc = static_accuracy(preds_a, frames, LABELS)
    assert (acc.n, acc.n_correct, acc.accuracy) == (2, 1, 0.5)


def test_static_set_scores_exactly_the_documented_frame_per_anchor():
    """A hand-made set covering every rule of static_frames' docstring, 3 models."""
    def key(video, frame):
        return f"val/{video}/{frame:06d}.JPEG"

    sets = {
        key("a", 10): [key("a", 8), key("a", 11), key("a", 9), key("a", 12)],  # counts 1, 2, 2, 0
        key("b", 10): [key("b", 13), key("b", 8)],   # nobody errs: the nearest (listed second)
        key("c", 10): [],                             # no neighbour: the anchor itself
        key("d", 10): [key("d", 12), key("d", 11)],  # anchor wrong for all models, neighbours fine
        key("e", 10): [key("e", 13)],                # k=1 leaves no candidate
    }
    labels = {k: [1] for a, ns in sets.items() for k in (a, *ns)}
    right = {k: 1 for k in labels}
    wrong_by_model = {"m1": [key("a", 8), key("a", 11), key("d", 10)],
                      "m2": [key("a", 11), key("a", 9), key("d", 10), key("e", 13)],
                      "m3": [key("a", 9), key("d", 10)]}
    preds = {m: {**right, **{k: 0 for k in wrong}} for m, wrong in wrong_by_model.items()}
    frames = static_frames(preds, sets, labels)
    assert frames == {
        # 11 and 9 tie at 2 wrong, both at |offset| 1: the earlier in the list (11) wins over 9
        key("a", 10): key("a", 11),
        key("b", 10): key("b", 8),
        key("c", 10): key("c", 10),
        key("d", 10): key("d", 11),
        key("e", 10): key("e", 13),
    }
    within_1 = static_frames(preds, sets, labels, k=1)
    assert within_1[key("a", 10)] == key("a", 11) and within_1[key("e", 10)] == key("e", 10)
    # with k=1 the e anchor is scored itself (right for m2); without k its neighbour (wrong for m2)
    assert static_accuracy(preds["m2"], frames, labels).n_correct == 3       # b/8, c/10, d/11
    assert static_accuracy(preds["m2"], within_1, labels).n_correct == 4     # + e/10
    # anchor label mode judges neighbours against the anchor's labels: a neighbour labelled 2
    # but predicted 1 counts as wrong in frame mode only
    relabelled = {**labels, key("b", 13): [2]}
    assert static_frames(preds, sets, relabelled)[key("b", 10)] == key("b", 13)
    assert static_frames(preds, sets, relabelled, label_mode="anchor")[key("b", 10)] == key("b", 8)


def test_conditional_accuracy_gu_et_al():
    preds = {k: 1 for k in LABELS}
    preds[f"{V}/000011.JPEG"] = 0
    pairs = pairs_at_distance(LABELS, 1)
    assert pairs == [
        (f"{V}/000009.JPEG", f"{V}/000010.JPEG"),
        (f"{V}/000010.JPEG", f"{V}/000011.JPEG"),
    ]
    r = conditional_accuracy(preds, LABELS, pairs)
    assert (r.n_pairs, r.n_first_correct, r.n_both_correct, r.value) == (2, 2, 1, 0.5)
    assert pmset_pairs(SETS, 3) == [(f"{V}/000010.JPEG", f"{V}/000013.JPEG")]
    assert pairs_at_distance(LABELS, 2) == [
        (f"{V}/000009.JPEG", f"{V}/000011.JPEG"),
        (f"{V}/000011.JPEG", f"{V}/000013.JPEG"),
    ]
    assert np.isnan(conditional_accuracy({k: 7 for k in LABELS}, LABELS, pairs).value)


def test_conditional_accuracy_on_real_metadata(vid):
    pmsets, labels = vid
    pairs = pmset_pairs(pmsets, 1)
    counts = Counter(abs(o) for row in frame_offsets(pmsets).values() for o in row.values())
    assert len(pairs) == counts[1]
    assert conditional_accuracy(all_correct(labels), labels, pairs).value == 1.0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: pmk_accuracy({}, SETS, LABELS), "predictions is empty"),
        (lambda: pmk_accuracy({k: 1 for k in LABELS}, {}, LABELS), "pmsets is empty"),
        (lambda: pmk_accuracy({k: 1 for k in LABELS}, SETS, {}), "labels is empty"),
        (lambda: pmk_accuracy({f"{V}/000010.JPEG": 1}, SETS, LABELS), "no prediction for frame"),
        (
            lambda: pmk_accuracy(
                {**{k: 1 for k in LABELS}, f"{V}/000009.JPEG": float("nan")}, SETS, LABELS
            ),
            "integer class",
        ),
        (
            lambda: pmk_accuracy({**{k: 1 for k in LABELS}, f"{V}/000009.JPEG": -1}, SETS, LABELS),
            "non-negative",
        ),
        (
            lambda: pmk_accuracy({k: 1 for k in LABELS}, SETS, {**LABELS, f"{V}/000009.JPEG": []}),
            "empty",
        ),
        (
            lambda: pmk_accuracy(
                {k: 1 for k in LABELS}, SETS, {k: v for k, v in LABELS.items() if "13" not in k}
            ),
            "labels has no entry",
        ),
        (
            lambda: pmk_accuracy({k: 1 for k in LABELS}, {"a": "b"}, LABELS),
            "list of neighbour keys",
        ),
        (
            lambda: pmk_accuracy(
                {k: 1 for k in LABELS}, {f"{V}/000010.JPEG": [f"{V}/000011.JPEG"] * 2}, LABELS
            ),
            "twice",
        ),
        (
            lambda: pmk_accuracy({k: 1 for k in LABELS}, SETS, LABELS, label_mode="video"),
            "label_mode",
        ),
        (lambda: pmk_accuracy({k: 1 for k in LABELS}, SETS, LABELS, k=-1), "k must be"),
        (lambda: frame_offsets({f"{V}/000010.JPEG": ["val/v2/000011.JPEG"]}), "another video"),
        (lambda: pmk_accuracy_curve({k: 1 for k in LABELS}, SETS, LABELS, ks=[]), "ks is empty"),
        (lambda: conditional_accuracy({k: 1 for k in LABELS}, LABELS, []), "pairs is empty"),
        (lambda: static_frames({}, SETS, LABELS), "empty"),
        (lambda: per_class_accuracy({"a": 1}, LABELS), "PmkResult"),
    ],
)
def test_malformed_input_is_rejected(call, message):
    with pytest.raises(InputError, match=message):
        call()


# ---------------------------------------------------------------- property test vs brute force

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31 - 1), st.sampled_from(["frame", "anchor"]))
def test_pmk_matches_brute_force_for_every_k(n_anchors, seed, label_mode):
    rng = np.random.default_rng(seed)
    pmsets, labels, preds = {}, {}, {}
    for a in range(n_anchors):
        video, centre = f"val/vid{a}", 100
        anchor = f"{video}/{centre:06d}.JPEG"
        offs = [o for o in range(-4, 5) if o and rng.random() < 0.6]
        pmsets[anchor] = [f"{video}/{centre + o:06d}.JPEG" for o in offs]
        for key in [anchor, *pmsets[anchor]]:
            labels[key] = sorted(set(rng.integers(0, 3, size=rng.integers(1, 3)).tolist()))
            preds[key] = int(rng.integers(0, 3))
    curve = pmk_accuracy_curve(preds, pmsets, labels, ks=range(6), label_mode=label_mode)
    for k in range(6):
        ok_anchor = ok_pmk = 0
        for anchor, nbs in pmsets.items():
            a_ok = preds[anchor] in labels[anchor]
            ok_anchor += a_ok
            near = [n for n in nbs if abs(parse_frame_key(n)[1] - 100) <= k]
            judge = (lambda n: labels[anchor]) if label_mode == "anchor" else (lambda n: labels[n])
            ok_pmk += a_ok and all(preds[n] in judge(n) for n in near)
        r = pmk_accuracy(preds, pmsets, labels, k=k, label_mode=label_mode)
        assert (r.n_anchor_correct, r.n_pmk_correct) == (ok_anchor, ok_pmk)
        assert curve.n_pmk_correct[k] == ok_pmk
        for anchor, frame in r.breaking_frame.items():
            assert (frame is None) == r.pmk_correct[anchor]
