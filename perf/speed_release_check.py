"""Speed of the released-layout pre-flight check that ``evaluate`` runs before an ImageNet-C-style run.

A synthetic ImageNet-C-shaped tree of empty files (``--settings`` settings x ``--classes`` wnid-like
class folders x ``--per-class`` files; default 5 x 1,000 x 50 = 250,000 files) is made once in
``--root`` (kept for reruns), then :func:`robustlab.data.releases.consistency.compare_settings` lists
and compares it with 1 and with the default 8 listing threads, and the old plan-time listing (the
class folders of each setting only, no file names) runs for comparison. Each figure is the best of
``--repeat`` runs, wall time, warm page cache (the first, cold listing is printed apart). For the
full release, scale by files: ImageNet-C's 95 settings hold 4.75 million files.

Usage::

    python perf/speed_release_check.py --root /tmp/rl-synthetic-c
    python perf/speed_release_check.py --root /tmp/rl-synthetic-c --settings 15 --json check.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from robustlab.data.classification import class_folders
from robustlab.data.releases.consistency import compare_settings


def make_tree(root: Path, settings: int, classes: int, per_class: int) -> dict[str, Path]:
    folders = {}
    for s in range(settings):
        setting = f"c{s // 5}/{s % 5 + 1}"
        folder = root / setting
        folders[setting] = folder
        for k in range(classes):
            cls = folder / f"n{k:08d}"
            if cls.is_dir() and sum(1 for _ in cls.iterdir()) == per_class:
                continue
            cls.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                (cls / f"ILSVRC2012_val_{k * per_class + i:08d}.JPEG").touch()
    return folders


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--settings", type=int, default=5)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--per-class", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    folders = make_tree(args.root, args.settings, args.classes, args.per_class)
    files = args.settings * args.classes * args.per_class
    start = time.perf_counter()
    report = compare_settings(folders)
    first = time.perf_counter() - start
    assert report.consistent and sum(report.images.values()) == files
    results = {"files": files, "first_listing_s": first,
               "check_1_thread_s": best(lambda: compare_settings(folders, workers=1), args.repeat),
               "check_8_threads_s": best(lambda: compare_settings(folders), args.repeat),
               "class_folders_only_s": best(lambda: [class_folders(f) for f in folders.values()], args.repeat)}
    results["files_per_s_8_threads"] = files / results["check_8_threads_s"]
    for key, value in results.items():
        print(f"{key:<26}{value:>14,.3f}" if isinstance(value, float) else f"{key:<26}{value:>14,}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
