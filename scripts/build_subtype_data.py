"""Build robustlab's shipped WordNet data for the subtype-robustness experiment.

The ImageNet-C paper's subtype experiment (Hendrycks & Dietterich; reference code
hendrycks/robustness ``auxiliary/ImageNet22K/test.py``) groups classes under 25 broad WordNet
types. This script takes WordNet 3.0's ``data.noun`` (Debian: ``wordnet-base``) and writes every
synset below those 25 (hyponym and instance-hyponym closure, 6,081 synsets) with its parents
inside that closure, so ImageNet-22K folders can be placed under their broad type without WordNet
at run time.

Output: ``src/robustlab/data/wordnet/subtypes25.json.gz``::

    {"source": "...", "broad_types": [[wnid, name], ...25],
     "parents": {wnid: [parent wnids inside the closure]}, "names": {wnid: first lemma}}

Usage::

    python scripts/build_subtype_data.py [--data-noun PATH] [--out PATH]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_wordnet_data import DEFAULT_DATA_NOUN, parse_data_noun  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "src/robustlab/data/wordnet/subtypes25.json.gz"
#: The 25 broad types, in the order of the reference's im1k_classes / im22k_classes tuples.
BROAD_TYPES = ("n01627424", "n02729837", "n02062017", "n01503061", "n02131653", "n07881800", "n02127808",
               "n02913152", "n02121620", "n03051540", "n02084071", "n03278248", "n02512053", "n03380867",
               "n13134947", "n12992868", "n09287968", "n02370806", "n02159955", "n03800933", "n02469914",
               "n01661091", "n04516672", "n07707451", "n04576211")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-noun", type=Path, default=DEFAULT_DATA_NOUN)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    parents, names = parse_data_noun(args.data_noun)
    children: dict[str, list[str]] = {}
    for wnid, ps in parents.items():
        for p in ps:
            children.setdefault(p, []).append(wnid)
    closure: set[str] = set()
    stack = list(BROAD_TYPES)
    while stack:
        wnid = stack.pop()
        if wnid not in closure:
            closure.add(wnid)
            stack.extend(children.get(wnid, []))
    payload = {
        "source": "WordNet 3.0 data.noun (Princeton WordNet licence): the hyponym closure of the 25 broad types of "
                  "the ImageNet-C paper's subtype experiment (hendrycks/robustness auxiliary/ImageNet22K/test.py); "
                  "built by scripts/build_subtype_data.py",
        "broad_types": [[w, names[w]] for w in BROAD_TYPES],
        "parents": {w: sorted(p for p in parents[w] if p in closure) for w in sorted(closure)},
        "names": {w: names[w] for w in sorted(closure)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(gzip.compress(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode(), mtime=0))
    print(f"wrote {args.out}: {len(closure)} synsets below {len(BROAD_TYPES)} broad types "
          f"({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
