"""``robustlab demo``: every benchmark on the embedded world, into a store, with a report.

The demo builds the embedded world (:mod:`robustlab.demo.world`, ``videos``,
``detection_scenes``) from data that ships inside scikit-learn and scikit-image, then runs,
through the evaluation engine and into one SQLite store:

1. ``corrupted``: the 19 corruptions x 5 severities on the test scenes, for the shipped CNN, its
   noise-augmented twin (``demo:cnn-noise``) and the shipped baseline (which plays AlexNet's
   role: CE and relative CE are normalised by it); the report compares the two CNNs per
   corruption;
2. ``perturbed``: the 10 test perturbation sequences (ImageNet-P) made on the fly, flip rates
   and top-5 distances normalised by the baseline;
3. ``video-pmk``: short H.264 videos -> one anchor per video with its +-k frames -> simulated
   reviewers (three annotators, a documented similarity rule) -> finalize -> pm-k (66 videos
   in the full demo: at least 60 anchors survive review, so pm-k intervals are at most about
   26 points wide);
4. ``adversarial-auc``: FGSM and (nested) PGD-10 over the paper's epsilon grid, R (FGSM's
   accuracy climbs back at large eps for the baseline -- the attack failing, not robustness --
   so PGD's R stands beside it);
5. ``detection-corrupted``: the tiny detector on multi-digit scenes under the 15 benchmark
   corruptions: P, mPC, rPC;

prints a summary table and writes ``report.html``. Everything is deterministic from the seed:
running it twice gives the same numbers (the second run finds every unit stored and only
rewrites the report).
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError

#: Sizes of the two modes. ``quick`` keeps every benchmark but uses few samples.
SIZES = {
    "full": {"scenes": 150, "perturb": 30, "detection": 30, "videos": 66},
    "quick": {"scenes": 24, "perturb": 16, "detection": 6, "videos": 4},
}
#: The attacks of the adversarial step: FGSM (the paper's) and PGD beside it (PGD-10, nested:
#: each strength starts from the previous one's perturbation, monotone in eps, about 10 s a model).
ATTACKS = {"fgsm": {}, "pgd": {"nested": True}}
#: The normaliser of CE, relative CE, FR and T5D (AlexNet's role in the papers).
BASELINE = "demo:baseline"
#: The models compared with the baseline, per benchmark family.
COMPARED = {"corruptions": ("demo:cnn", "demo:cnn-noise"), "perturbations": ("demo:cnn", "demo:cnn-noise"),
            "video": ("demo:cnn", "demo:cnn-noise"), "adversarial": ("demo:cnn",)}
#: Free disk space the demo wants before it starts (world, store, report).
MIN_FREE_BYTES = 200 * 2**20
#: torch threads of the demo's inference. One: the engine's decoding/corruption workers use the
#: other cores (more OpenMP threads beside busy workers mostly spin: they nearly tripled the
#: demo's CPU time on 2 cores), and no number depends on the machine's core count.
INFERENCE_THREADS = 1


@dataclass
class DemoRun:
    """What the demo produced: run ids per step, the report path and timings."""

    out: Path
    store: Path
    report: Path | None = None
    runs: dict[str, list[str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def check_output_dir(out: Path) -> Path:
    """Fail early, naming the folder, when it cannot hold the demo (read-only, full, a file)."""
    out = Path(out).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out} is a file, not a folder: choose another --out.")
    created = not out.exists()
    try:
        try:
            out.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=out, prefix=".robustlab-probe-", delete=True) as fh:
                fh.write(b"probe")
                fh.flush()
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise DataError(f"cannot write to {out}: the disk is full. Free some space or choose another "
                                "--out.") from exc
            raise DataError(f"cannot write to {out}: {exc.strerror or exc} (read-only or no permission). "
                            "Choose a writable folder with --out.") from exc
        free = shutil.disk_usage(out).free
        if free < MIN_FREE_BYTES:
            raise DataError(f"{out} has only {free / 2**20:.0f} MiB free; the demo needs about "
                            f"{MIN_FREE_BYTES / 2**20:.0f} MiB. Free some space or choose another --out.")
    except DataError:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # leave nothing behind
        raise
    return out


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads; the previous number is restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def build_world(out: Path, *, sizes: dict, seed: int, log: Callable[[str], None]) -> dict[str, Path]:
    """Write the scenes, videos (sampled, reviewed, finalized) and detection scenes under ``out/world``."""
    from ..video import finalize, sample_videos
    from .detection_scenes import make_detection_scenes, write_coco_scenes
    from .reviewers import write_simulated_reviews
    from .videos import make_videos
    from .world import scene_dataset, write_image_folder

    world = out / "world"
    paths = {"scenes": world / "scenes", "videos": world / "videos", "pmk": world / "pmk-set",
             "detection": world / "detection"}
    if not (paths["scenes"] / ".complete").exists():
        write_image_folder(scene_dataset("test", n=sizes["scenes"], seed=seed), paths["scenes"])
        (paths["scenes"] / ".complete").write_text("")
    log(f"scenes: {sizes['scenes']} test scenes (64x64, 10 digit classes) in {paths['scenes']}")
    if not (paths["pmk"] / "pmsets.json").exists():
        truth = make_videos(paths["videos"], seed=seed, n_videos=sizes["videos"])
        sample_videos(paths["videos"] / "videos", paths["pmk"], k=10, seed=seed,
                      labels={name: v["label"] for name, v in truth["videos"].items()},
                      class_names=[str(d) for d in range(10)])
        reviews = write_simulated_reviews(paths["pmk"], paths["videos"] / "truth.json", seed=seed)
        finalize(paths["pmk"], reviews)
    log(f"videos: {sizes['videos']} H.264 clips -> anchors +-10 frames -> simulated reviews -> {paths['pmk']}")
    ann = paths["detection"] / "annotations" / "instances_test.json"
    if not ann.exists():
        write_coco_scenes(make_detection_scenes("test", sizes["detection"], seed=seed), paths["detection"])
    log(f"detection: {sizes['detection']} multi-digit scenes with COCO boxes in {paths['detection']}")
    return paths


def run_demo(out: str | os.PathLike = "robustlab-demo", *, quick: bool = False, seed: int = 0,
             progress: str | bool | None = None, log: Callable[[str], None] = print) -> DemoRun:
    """Build the world, run every benchmark, write ``out/report.html``; see the module docstring."""
    from .. import engine
    from ..report import write_report
    from ..store import open_store

    out = check_output_dir(Path(out))
    sizes = SIZES["quick" if quick else "full"]
    demo = DemoRun(out=out, store=out / "store")
    t0 = time.perf_counter()
    paths = build_world(out, sizes=sizes, seed=seed, log=log)
    demo.seconds["world"] = time.perf_counter() - t0
    common = {"store": demo.store, "progress": progress, "workers": 0 if quick else None}

    def step(name: str, fn: Callable[[], list]) -> None:
        start = time.perf_counter()
        demo.runs[name] = [r.run_id for r in fn()]
        demo.seconds[name] = time.perf_counter() - start
        log(f"{name}: {len(demo.runs[name])} run(s) in {demo.seconds[name]:.1f} s")

    def corruption_runs() -> list:
        opts = {"corruptions": "all", "severities": "1-5", "seed": seed, "class_map": "sorted"}
        base = engine.evaluate(BASELINE, "corrupted", paths["scenes"], baseline_run="self", **opts, **common)
        return [base] + [engine.evaluate(m, "corrupted", paths["scenes"], baseline_run=base.run_id, **opts, **common)
                         for m in COMPARED["corruptions"]]

    def perturbation_runs() -> list:
        opts = {"setting": "cifar", "limit": sizes["perturb"], "class_map": "sorted", "seed": seed}
        base = engine.evaluate(BASELINE, "perturbed", paths["scenes"], baseline_run="self", **opts, **common)
        return [base] + [engine.evaluate(m, "perturbed", paths["scenes"], baseline_run=base.run_id, **opts, **common)
                         for m in COMPARED["perturbations"]]

    def video_runs() -> list:
        return [engine.evaluate(m, "video-pmk", paths["pmk"], class_map="none", **common)
                for m in (BASELINE, *COMPARED["video"])]

    def adversarial_runs() -> list:
        return [engine.evaluate(m, "adversarial-auc", paths["scenes"], class_map="sorted", seed=seed, attack=attack,
                                **options, **common)
                for m in (BASELINE, *COMPARED["adversarial"]) for attack, options in ATTACKS.items()]

    def detection_runs() -> list:
        return [engine.evaluate("demo:detector", "detection-corrupted", paths["detection"], corruptions="benchmark",
                                severities="1-5", seed=seed, **common)]

    with torch_threads(INFERENCE_THREADS):
        step("corruptions", corruption_runs)
        step("perturbations", perturbation_runs)
        step("video pm-k", video_runs)
        step("adversarial", adversarial_runs)
        step("detection", detection_runs)
    with open_store(demo.store) as st:
        demo.report = write_report(st, out / "report.html", runs=[r for ids in demo.runs.values() for r in ids],
                                   title="robustlab demo")
    demo.seconds["total"] = time.perf_counter() - t0
    return demo


def print_summary(demo: DemoRun, console=None) -> None:
    """The summary table: one row per run with its benchmark's headline numbers."""
    from rich.console import Console
    from rich.table import Table

    from ..report import collect_results, headline
    from ..report.render import SUMMARY_LEGEND
    from ..store import open_store

    console = console or Console()
    table = Table(title="robustlab demo", show_lines=False)
    for col in ("benchmark", "model", "headline", "run"):
        table.add_column(col)
    with open_store(demo.store) as st:
        results = collect_results(st, [rid for ids in demo.runs.values() for rid in ids])
        for r in results:
            table.add_row(r.benchmark, r.model, headline(r, results, st), r.run_id[:10])
    console.print(table)
    console.print(SUMMARY_LEGEND, style="dim", markup=False)
    console.print(f"report: {demo.report}   store: {demo.store}   ({demo.seconds.get('total', 0):.0f} s)")

