"""Subtype robustness: broad types and subtypes through WordNet, the ImageNet-22K split, the last-layer
fine-tune with `robustlab finetune --classes subtypes25`, seen vs unseen accuracy, the report figure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.data.images import write_image
from robustlab.data.subtypes import (SUBTYPE_CLASSES, SubtypeHierarchy, broad_type_index, load_split,
                                     shipped_hierarchy, split_imagenet22k)
from robustlab.data.wordnet import ilsvrc_wnids
from robustlab.engine import evaluate
from robustlab.errors import DataError, InputError
from robustlab.report.sections import build_sections

TINY = Path(__file__).resolve().parents[1] / "train" / "tiny_classifier.py"
#: seen (ImageNet-1K) and unseen (22K only) subtypes of dog and amphibian in the reference's lists, an
#: amphibian below the type in WordNet that the reference does not list, and a class below no broad type
SEEN = {"n02085620": "dog", "n02086240": "dog", "n01641577": "amphibian", "n01644373": "amphibian"}
UNSEEN = {"n02084732": "dog", "n01639765": "amphibian"}
WORDNET_ONLY = "n01627976"
OUTSIDE = "n04254680"  # soccer ball
COLOUR = {"dog": 0, "amphibian": 1}


def test_the_25_broad_types_and_wordnet_subtypes():
    h = shipped_hierarchy()
    assert h.broad_types == SUBTYPE_CLASSES and len(SUBTYPE_CLASSES) == 25
    wnids = [w for _, w in SUBTYPE_CLASSES]
    assert wnids[:4] == ["n01627424", "n02729837", "n02062017", "n01503061"]  # amphibian, appliance, aquatic mammal, bird
    # the seen subtypes are the ILSVRC classes below each type: dogs are the 118 dog breeds
    ilsvrc = ilsvrc_wnids()
    seen = {t: [w for w in ilsvrc if broad_type_index(w) == t] for t in range(25)}
    assert len(seen[wnids.index("n02084071")]) == 118
    assert all(seen.values()) and len({w for ws in seen.values() for w in ws}) == sum(map(len, seen.values()))
    assert broad_type_index(OUTSIDE) is None and broad_type_index("n02084071") == wnids.index("n02084071")


def test_a_tiny_wordnet_shaped_hierarchy():
    h = SubtypeHierarchy((("animal", "n00000001"), ("plant", "n00000002")),
                         {"n00000003": ["n00000001"], "n00000004": ["n00000003"], "n00000005": ["n00000001", "n00000002"],
                          "n00000006": ["n00000005", "n00000002"]})
    assert broad_type_index("n00000004", h) == 0
    assert broad_type_index("n00000005", h) is None  # equally near below both: ambiguous, left out
    assert broad_type_index("n00000006", h) == 1  # plant is nearer (1 step) than animal (2)
    assert broad_type_index("n00000009", h) is None


def write_images(root: Path, folders: dict[str, str], n: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    for wnid, kind in folders.items():
        for k in range(n):
            img = rng.integers(20, 90, (40, 44, 3)).astype(np.uint8)
            img[:, :, COLOUR[kind]] += 140
            write_image(root / wnid / f"{wnid}_{k}.JPEG", img)
    return root


@pytest.fixture(scope="module")
def imagenet22k(tmp_path_factory) -> Path:
    return write_images(tmp_path_factory.mktemp("imagenet22k"),
                        {**SEEN, **UNSEEN, WORDNET_ONLY: "amphibian", OUTSIDE: "dog"}, 6, seed=0)


@pytest.fixture(scope="module")
def val(tmp_path_factory) -> Path:
    """ImageNet-1K val's folders of the seen subtypes (3 images each), and one of another class."""
    return write_images(tmp_path_factory.mktemp("val"), {**SEEN, OUTSIDE: "dog"}, 3, seed=5)


def test_split_and_layout_errors(imagenet22k, val, tmp_path):
    split = split_imagenet22k(imagenet22k, clean_data=val)  # the defaults: the reference's lists, seen from val
    assert split.lists == "reference" and split.seen_from == "val"
    assert sorted(split.seen_wnids) == sorted(SEEN) and sorted(split.unseen_wnids) == sorted(UNSEEN)
    assert split.ignored == 2 and len(split.unseen) == 12  # the WordNet-only amphibian and the ball: in no list
    assert len(split.train) == 24 and len(split.seen) == 12 and all(p.startswith(str(val)) for p in split.seen)
    assert len(split.missing_seen) == 542 - 4 and "warning" not in split.summary()
    wordnet = split_imagenet22k(imagenet22k, clean_data=val, lists="wordnet")
    assert sorted(wordnet.unseen_wnids) == sorted([*UNSEEN, WORDNET_ONLY]) and wordnet.ignored == 1
    held = split_imagenet22k(imagenet22k, seen_from="holdout", holdout=0.34, seed=1)
    assert len(held.train) + len(held.seen) == 24 and all(p.startswith(str(imagenet22k)) for p in held.seen)
    assert split_imagenet22k(imagenet22k, seen_from="holdout", holdout=0.34, seed=1).seen == held.seen
    assert "may include training images" in held.summary()["warning"]
    with pytest.raises(InputError, match="tested on ImageNet-1K val, as the reference does: give --clean-data"):
        split_imagenet22k(imagenet22k)
    with pytest.raises(InputError, match="unknown subtype lists 'paper'"):
        split_imagenet22k(imagenet22k, clean_data=val, lists="paper")
    bad = tmp_path / "bad"
    (bad / "dogs").mkdir(parents=True)
    with pytest.raises(DataError, match=r"<root>/<WordNet wnid, e.g. n02084071>/<image>.*'dogs' is not a wnid"):
        split_imagenet22k(bad, clean_data=val)
    with pytest.raises(DataError, match="no images of unseen subtypes"):
        only_seen = tmp_path / "seen-only"
        for w in SEEN:
            (only_seen / w).mkdir(parents=True)
            (only_seen / w / "a.JPEG").write_bytes((imagenet22k / w / f"{w}_0.JPEG").read_bytes())
        split_imagenet22k(only_seen, clean_data=val)


def test_the_experiment_end_to_end(imagenet22k, val, tmp_path):
    out = tmp_path / "split"
    result = CliRunner().invoke(app, ["subtypes", str(imagenet22k), str(out), "--clean-data", str(val)])
    assert result.exit_code == 0, result.output
    assert "4 seen and 2 unseen subtypes of 25 broad types, reference lists" in result.output
    assert "--classes subtypes25" in result.output
    meta, lists = load_split(out)
    assert meta["images"]["unseen"] == 12 and all(Path(p).is_absolute() for p in lists["unseen"])
    assert meta["lists"] == "reference" and meta["seen_from"] == "val" and "hendrycks/robustness" in meta["lists_source"]

    from robustlab.train import finetune

    spec = finetune(f"python:{TINY}:make_tiny1000", out / "train.txt", out=tmp_path / "ft", classes="subtypes25",
                    workers=0, progress=False)  # the defaults: the reference's recipe
    manifest = json.loads((tmp_path / "ft" / "finetuned.json").read_text())
    assert len(manifest["classes"]) == 25 and manifest["recipe"]["train"] == "head"
    assert manifest["recipe"]["name"] == "appendix-g" and manifest["head"]["init"] == "fresh"
    assert manifest["settings"]["frozen_mode"] == "train" and manifest["settings"]["batch_size"] == 128

    run = evaluate(spec, "subtype-robustness", out, store=tmp_path / "store", workers=0, device="cpu",
                   progress=False, imagenet_top1=71.2)
    s = run.summary
    assert run.config["lists"] == "reference" and run.config["seen_from"] == "val"
    assert not any("training images" in n for n in run.notes)
    assert s["seen"]["n"] == len(lists["seen"]) == 12 and s["unseen"]["n"] == 12
    assert s["imagenet_top1"] == pytest.approx(0.712)
    assert s["gap"] == pytest.approx(s["seen"]["accuracy"] - s["unseen"]["accuracy"])
    assert set(k for k, v in s["unseen"]["per_type"].items() if v is not None) == {"dog", "amphibian"}
    sec = next(x for x in build_sections([run]) if x.key == "subtype")
    assert sec.rows[0][1] == "71.2" and len(sec.figures) == 1 and "<svg" in sec.figures[0].svg
    assert "unseen subtypes" in run.table()
    held = tmp_path / "held"
    out = CliRunner().invoke(app, ["subtypes", str(imagenet22k), str(held), "--seen-from", "holdout"])
    assert out.exit_code == 0 and "may include training images" in out.output
    other = evaluate(spec, "subtype-robustness", held, store=tmp_path / "store", workers=0, device="cpu", progress=False)
    assert any("may include training images" in n for n in other.notes)
    row = next(x for x in build_sections([other]) if x.key == "subtype").rows[0]
    assert "seen from holdout" in row[5]
