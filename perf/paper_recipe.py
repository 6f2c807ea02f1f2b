"""The adversarial study with the paper's recipe (Kunhardt, Deza & Poggio), and R per
architecture against the paper's approximate values (SPEC, "Adversarial robustness").

The paper recipe (``recipe = "paper"``): SGD, momentum 0.9, weight decay 5e-4, batch 125, lr
divided by 10 at 50% of training; LeNet / FullyConnectedNet (7,500 hidden units): lr 0.01,
300 epochs; ResNet50: lr 0.1, 125 epochs; FGSM over eps 0..0.3 on the full test set at epochs
1, 10, 25, 50, 150, 300 (1, 10, 25, 50, 100, 125). It needs a GPU: on a CPU one LeNet model
takes hours, ResNet50 days.

    python perf/paper_recipe.py --data-root DIR [--seeds 2] [--architectures lenet,fc]
                                [--datasets mnist,cifar10] [--out DIR] [--epochs N]

- With CUDA: trains ``seeds`` models per (architecture, dataset) with the paper recipe (MNIST
  and CIFAR-10 must be in ``--data-root``, torchvision layout, or downloadable), then prints
  mean R at the last epoch beside the paper's value, seconds per epoch, and the study's table.
- Without CUDA (or with ``--smoke``): a smoke run of the same code path on the offline stand-ins
  (scikit-learn digits for MNIST, scikit-image textures for CIFAR-10), 2 epochs, 2 seeds, and the
  line "GPU figures pending": its R values check the pipeline and are not comparable with the paper.

``--epochs N`` shortens the paper recipe (the published attacked epochs up to N, plus N).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import torch

from robustlab.studies import config_from_dict, run_study

#: Mean R of fully trained models in the paper (SPEC): (architecture, dataset) -> R.
PAPER_R = {("lenet", "mnist"): 0.52, ("lenet", "cifar10"): 0.10, ("fc", "mnist"): 0.31, ("fc", "cifar10"): 0.034}
#: Stand-ins used by the smoke run for each dataset.
STANDINS = {"mnist": "digits", "cifar10": "textures"}


def study_dict(args, smoke: bool) -> dict:
    study = {"recipe": "paper", "seeds": args.seeds, "data_root": args.data_root, "device": args.device}
    if smoke:
        # 2 epochs at a batch that learns on ~1,350 training images; the FC keeps its 7,500 units
        study.update(epochs=2, checkpoints=[1, 2], batch_size=32, eval_samples=200)
    elif args.epochs:
        study["epochs"] = args.epochs
    conditions = [{"name": f"{d}-{a}", "architecture": a, "dataset": STANDINS[d] if smoke else d}
                  for a in args.architectures for d in args.datasets]
    return {"study": study, "conditions": conditions}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", default="~/.robustlab/data", help="MNIST / CIFAR-10 folder (torchvision layout).")
    ap.add_argument("--seeds", type=int, default=2, help="Models per condition (the paper trains 20).")
    ap.add_argument("--architectures", default="lenet,fc", help="Comma-separated: lenet, fc, resnet50.")
    ap.add_argument("--datasets", default="mnist,cifar10", help="Comma-separated: mnist, cifar10.")
    ap.add_argument("--epochs", type=int, default=None, help="Shorten the recipe to N epochs (GPU runs).")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", default=None, help="Study folder (default: a temporary one).")
    ap.add_argument("--smoke", action="store_true", help="The CPU smoke run even when CUDA is present.")
    args = ap.parse_args()
    args.architectures = [a.strip() for a in args.architectures.split(",") if a.strip()]
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    gpu = torch.cuda.is_available() and args.device != "cpu"
    smoke = args.smoke or not gpu
    if smoke:
        torch.set_num_threads(1)
    cfg = config_from_dict(study_dict(args, smoke), source="perf/paper_recipe.py")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="paper-recipe-"))
    device = torch.cuda.get_device_name(0) if gpu and not smoke else "cpu"
    print(f"device: {device}; {'SMOKE run on stand-in data' if smoke else 'paper recipe'}; out: {out}")
    for c in cfg.conditions:
        r = c.recipe
        print(f"  {c.name}: {c.model_family}, {r.epochs} epochs, lr {r.lr:g} (/10 after epoch {r.drop_epoch}), "
              f"batch {r.batch_size}, attacked at {list(c.eval_epochs)}")
    start = time.perf_counter()
    result = run_study(cfg, out, log=lambda line: print("  " + line, flush=True))
    wall = time.perf_counter() - start
    epochs = sum(c.recipe.epochs for c in cfg.conditions) * len(cfg.seeds)
    print(f"\nwall {wall:.1f} s for {epochs} model-epochs ({wall / max(epochs, 1):.2f} s per epoch incl. attacks)\n")
    print(f"{'architecture':<14}{'dataset':<10}{'epoch':>6}{'n':>4}{'R (mean ± SD)':>18}{'paper R':>10}")
    rows = []
    for c in cfg.conditions:
        last = result.row(c.name, c.eval_epochs[-1])
        dataset = c.name.split("-")[0]
        paper = PAPER_R.get((c.architecture, dataset))
        sd = "" if math.isnan(last["R_sd"]) else f" ± {last['R_sd']:.3f}"
        print(f"{c.model_family:<14}{dataset:<10}{last['epoch']:>6}{last['n']:>4}{last['R_mean']:>11.3f}{sd:<7}"
              f"{'' if paper is None else f'~{paper:g}':>10}")
        rows.append({"architecture": c.model_family, "dataset": dataset, "epoch": last["epoch"], "n": last["n"],
                     "R_mean": last["R_mean"], "R_sd": last["R_sd"], "paper_R": paper})
    if smoke:
        print("\nGPU figures pending: this machine has no CUDA device, so the paper recipe (300 / 125 epochs on "
              "MNIST and CIFAR-10) was not run; the smoke values above come from 2 epochs on stand-in data and "
              "are not comparable with the paper.")
    (out / "paper_recipe.json").write_text(json.dumps({"smoke": smoke, "device": device, "wall_s": wall,
                                                       "rows": rows}, indent=1))
    print(f"\n{result.markdown()}\nwrote {out / 'report.html'} and {out / 'paper_recipe.json'}")


if __name__ == "__main__":
    main()
