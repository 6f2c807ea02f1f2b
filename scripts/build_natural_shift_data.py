"""Build robustlab's shipped class lists of the natural-shift test sets.

Input: a checkout (or bare git directory) of the imagenet-testbed
(https://github.com/modestyachts/imagenet-testbed, MIT licence), which holds

- ``src/eval_settings/imagenet_a.py`` / ``imagenet_r.py``: the 200 ImageNet-1k class indices of
  ImageNet-A and ImageNet-R (``class_sublist``; ImageNet-A's equals the non-negative entries of
  ``thousand_k_to_200`` in hendrycks/natural-adv-examples' ``eval.py``);
- ``src/eval_settings/objectnet_metadata/``: ``folder_to_objectnet_label.json`` (ObjectNet's 313
  image folders and their class names), ``objectnet_to_imagenet_1k.json`` (the 113 ObjectNet classes
  that overlap ImageNet-1k, each with its ImageNet class names, ``;``-separated) and
  ``imagenet_to_labels.json`` (ImageNet index -> class names).

Output: ``src/robustlab/data/natural_shifts.json``::

    {"source": "...",
     "imagenet_a": [200 ImageNet-1k indices], "imagenet_r": [200 indices],
     "objectnet_folders": {folder: ObjectNet class name},          # all 313
     "objectnet_to_imagenet": {folder: [ImageNet-1k indices]}}      # the 113 overlapping classes

Usage::

    python scripts/build_natural_shift_data.py [--testbed PATH] [--out PATH]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "src/robustlab/data/natural_shifts.json"
DEFAULT_TESTBED = "/work/.mirror/modestyachts+imagenet-testbed/repo"


def read(testbed: Path, path: str) -> str:
    """A file of the testbed: from a checkout, or ``git show HEAD:path`` of a git directory."""
    if (testbed / path).is_file():
        return (testbed / path).read_text(encoding="utf-8")
    return subprocess.run(["git", f"--git-dir={testbed}", "show", f"HEAD:{path}"], check=True, capture_output=True,
                          text=True).stdout


def class_sublist(source: str) -> list[int]:
    """The ``class_sublist = [...]`` literal of an eval-setting module (parsed, not executed)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "class_sublist" for t in node.targets):
            return [int(v) for v in ast.literal_eval(node.value)]
    raise SystemExit("class_sublist not found")


def build(testbed: Path) -> dict:
    meta = "src/eval_settings/objectnet_metadata/"
    folders = json.loads(read(testbed, meta + "folder_to_objectnet_label.json"))
    to_imagenet = json.loads(read(testbed, meta + "objectnet_to_imagenet_1k.json"))
    names = json.loads(read(testbed, meta + "imagenet_to_labels.json"))
    index_of = {v: int(k) for k, v in names.items()}
    folder_of = {v: k for k, v in folders.items()}
    overlap: dict[str, list[int]] = {}
    for label, imagenet_names in to_imagenet.items():
        overlap[folder_of[label]] = sorted(index_of[n] for n in imagenet_names.split("; "))
    claimed = [i for ids in overlap.values() for i in ids]
    assert len(claimed) == len(set(claimed)), "an ImageNet class maps to two ObjectNet classes"
    assert len(folders) == 313 and len(overlap) == 113, (len(folders), len(overlap))
    a = class_sublist(read(testbed, "src/eval_settings/imagenet_a.py"))
    r = class_sublist(read(testbed, "src/eval_settings/imagenet_r.py"))
    assert len(a) == len(set(a)) == 200 and len(r) == len(set(r)) == 200
    return {"source": "modestyachts/imagenet-testbed (MIT): src/eval_settings/imagenet_a.py, imagenet_r.py, "
                      "objectnet_metadata/*.json",
            "imagenet_a": a, "imagenet_r": r, "objectnet_folders": dict(sorted(folders.items())),
            "objectnet_to_imagenet": dict(sorted(overlap.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testbed", type=Path, default=Path(DEFAULT_TESTBED))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    data = build(args.testbed)
    args.out.write_text(json.dumps(data, indent=0, sort_keys=False) + "\n")
    print(f"wrote {args.out}: {len(data['objectnet_to_imagenet'])} ObjectNet classes over "
          f"{sum(map(len, data['objectnet_to_imagenet'].values()))} ImageNet classes")


if __name__ == "__main__":
    main()
