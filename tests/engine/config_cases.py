"""The stored configs of the built-in benchmarks in the cases that decide which keys they hold (layouts,
a limit, keep_input_size, zero_shot_classes, nested, labels, run options, tag...), made on small
generated data. Their stored form is hashed into the run id, so it must not change: the golden file
tests/fixtures/configs_v1.json was written by this module with robustlab as it was before the configs
became dataclasses (issue 35)::

    PYTHONPATH=src python tests/engine/config_cases.py tests/fixtures/configs_v1.json

Paths are written relative to the data root (``<root>/...``), so the cases compare on any machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

if __package__:  # imported by the tests
    from .conftest import WNIDS, make_folder, make_imagenet_c
    from .detection_data import make_coco
else:  # run as a script to write the golden file
    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import WNIDS, make_folder, make_imagenet_c  # noqa: E402
    from detection_data import make_coco  # noqa: E402

from robustlab.data.natural_shifts import imagenet_a_indices, subset_wnids  # noqa: E402
from robustlab.engine.benchmark import get_benchmark  # noqa: E402
from robustlab.engine.evaluation import run_config  # noqa: E402
from robustlab.engine.runtime import RunOptions  # noqa: E402


def build_data(root: Path) -> dict[str, Path]:
    """The datasets the cases read, under ``root``."""
    data = {"imagenet-c": make_imagenet_c(root / "imagenet-c", corruptions=("fog", "contrast"), per_class=2),
            "val": make_folder(root / "val", WNIDS, 2, size=(40, 52), seed=7),
            "labelled": make_folder(root / "labelled", ("cat", "dog", "fox"), 3, size=(36, 44), seed=3),
            "coco": make_coco(root / "coco", n=4)}
    cifar = root / "cifar-c"
    cifar.mkdir()
    rng = np.random.default_rng(0)
    for name in ("fog", "contrast"):
        np.save(cifar / f"{name}.npy", rng.integers(0, 255, (5 * 20, 32, 32, 3), dtype=np.uint8))
    np.save(cifar / "labels.npy", np.tile(np.arange(10), 10).astype(np.int64))
    data["cifar-c"] = cifar
    for labelled in (True, False):
        cifar_p = root / f"cifar-p-{labelled}"
        cifar_p.mkdir()
        np.save(cifar_p / "rotate.npy", rng.integers(0, 255, (6, 31, 32, 32, 3), dtype=np.uint8))
        if labelled:
            np.save(cifar_p / "labels.npy", np.arange(6).astype(np.int64) % 3)
        data[f"cifar-p-{labelled}"] = cifar_p
    wnids = subset_wnids(imagenet_a_indices())[:3]
    data["imagenet-a"] = make_folder(root / "imagenet-a", wnids, 2, seed=3)
    data["imagenet-a-val"] = make_folder(root / "imagenet-a-val", wnids, 2, seed=4)
    return data


#: ``name: (benchmark, data key, options)``; a ``run`` entry adds the engine's run-level arguments.
CASES = {
    "imagenet-c folders": ("imagenet-c", "imagenet-c", {}),
    "imagenet-c folders limit clean": ("imagenet-c", "imagenet-c", {"limit": 2, "clean_data": "val",
                                                                      "corruptions": "fog", "severities": "1,3"}),
    "imagenet-c folders path order": ("imagenet-c", "imagenet-c", {"limit": 3, "limit_order": "path"}),
    "imagenet-c cifar": ("imagenet-c", "cifar-c", {"corruptions": "fog,contrast"}),
    "imagenet-c cifar limit": ("imagenet-c", "cifar-c", {"corruptions": "fog", "limit": 3, "shard_size": 2}),
    "imagenet-c on the fly": ("imagenet-c", "val", {"on_the_fly": True, "corruptions": "fog"}),
    "imagenet-c on the fly keep size torch": ("imagenet-c", "val", {
        "on_the_fly": True, "corruptions": "fog", "keep_input_size": True, "corruption_backend": "torch",
        "seed": 3, "clean": False, "limit": 2}),
    "corrupted": ("corrupted", "labelled", {"corruptions": "fog,snow", "severities": "2"}),
    "corrupted limit self baseline": ("corrupted", "labelled", {"limit": 2, "baseline_run": "self", "seed": 5}),
    "imagenet-c-bar on the fly": ("imagenet-c-bar", "val", {"on_the_fly": True, "corruptions": "blue_noise_sample"}),
    "imagenet-c-bar on the fly keep size limit": ("imagenet-c-bar", "val", {
        "on_the_fly": True, "corruptions": "blue_noise_sample", "keep_input_size": True, "limit": 2, "seed": 1}),
    "perturbed": ("perturbed", "labelled", {"perturbations": "rotate,gaussian_noise"}),
    "perturbed limit cifar": ("perturbed", "labelled", {"perturbations": "rotate", "limit": 2, "setting": "cifar",
                                                        "strides": "1"}),
    "imagenet-p cifar labels": ("imagenet-p", "cifar-p-True", {"strides": "1"}),
    "imagenet-p cifar no labels limit": ("imagenet-p", "cifar-p-False", {"strides": "1", "limit": 2}),
    "imagenet-a": ("imagenet-a", "imagenet-a", {}),
    "imagenet-a zero shot subset clean limit": ("imagenet-a", "imagenet-a", {
        "zero_shot_classes": "subset", "clean_data": "imagenet-a-val", "limit": 3}),
    "adversarial digits fgsm": ("adversarial-auc", None, {"attack": "fgsm", "limit": 4}),
    "adversarial digits pgd nested": ("adversarial-auc", None, {"attack": "pgd", "nested": True, "limit": 4,
                                                                 "eps": "0,0.1"}),
    "adversarial folder": ("adversarial-auc", "labelled", {"eps": "0,0.05"}),
    "coco-c": ("coco-c", "coco", {"corruptions": "fog", "severities": "1,2"}),
    "coco-c limit voc metric": ("coco-c", "coco", {"corruptions": "fog", "limit": 2, "metric": "voc",
                                                   "label_map": {"1": 1}}),
    "run options tag max pixels": ("corrupted", "labelled", {"corruptions": "fog", "run": {
        "tag": "again", "max_pixels": 100000, "precision": "bf16", "channels_last": True, "compile": True,
        "decode": "gpu"}}),
}


def stored(config) -> dict:
    """A config's stored form (a dict before the configs were dataclasses, ``to_dict()`` after)."""
    return config.to_dict() if hasattr(config, "to_dict") else dict(config)


def relative(value, root: Path):
    """``value`` with the data root written ``<root>`` (JSON round trip, as the store keeps it)."""
    text = json.dumps(value, sort_keys=True, default=str)
    return json.loads(text.replace(str(root.resolve()), "<root>"))


def compute(root: Path) -> dict[str, dict]:
    """``{case: stored config}`` of every case, on data built under ``root``."""
    data = build_data(root)
    out = {}
    for name, (benchmark, key, options) in CASES.items():
        options = dict(options)
        run = options.pop("run", {})
        given = {k: str(data[v]) if k in ("clean_data",) else v for k, v in options.items()}
        bench = get_benchmark(benchmark)
        where = "digits" if key is None else str(data[key])
        run_options = RunOptions.of(**{k: run[k] for k in ("precision", "channels_last", "compile", "decode")
                                       if k in run})
        config = run_config(bench, where, given, "cpu", tag=run.get("tag"), max_pixels=run.get("max_pixels"),
                            run_options=run_options)
        out[name] = relative(stored(config), root)
    return out


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cases = compute(Path(tmp))
    Path(sys.argv[1]).write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    print(f"{len(cases)} configs written to {sys.argv[1]}", file=sys.stderr)
