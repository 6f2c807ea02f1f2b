"""Speed of robustlab's epsilon sweep against a plain per-eps loop, in one run.

Workload (issue 7): PGD-10 (and FGSM) over the paper's 9-point grid on a small CNN
(LeNet on 32x32x3), N images. The baseline is what users write by hand: for every eps, run the
attack on every batch and count correct predictions (one attack call per eps; FGSM recomputes
its gradient for every eps). robustlab's sweep computes FGSM's gradient once for the whole grid
and runs PGD for all strengths at once on a replicated batch.

    python perf/speed_attacks.py [--images 512] [--batch-size 128] [--threads 1] [--device cpu]

Prints images/s for both and their ratio, and the largest accuracy difference: 0 for FGSM;
for independent PGD only samples misclassified without perturbation can differ (the sweep
counts them as non-robust at once: delta = 0 is in every ball); nested PGD is a stronger attack
(warm start from the previous strength) and is reported beside them.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from robustlab.attacks import PAPER_EPS_GRID, epsilon_sweep, fgsm, pgd
from robustlab.data.standins import textures_dataset
from robustlab.studies import build_architecture
from robustlab.studies.adversarial import train_epoch


def per_eps_loop(model, x, y, attack, batch_size, steps):
    accs = []
    for eps in PAPER_EPS_GRID:
        correct = 0
        for i in range(0, len(x), batch_size):
            xb, yb = x[i:i + batch_size], y[i:i + batch_size]
            adv = fgsm(model, xb, yb, eps) if attack == "fgsm" else pgd(model, xb, yb, eps, steps=steps, random_start=False)
            with torch.no_grad():
                correct += int((model(adv).argmax(1) == yb).sum())
        accs.append(correct / len(x))
    return np.array(accs)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data = textures_dataset(n_per_class=max(1, args.images // 10 + 1), split="all")
    x, y = data.tensors()
    x, y = x[:args.images].to(args.device), y[:args.images].to(args.device)
    model = build_architecture("lenet", seed=0).to(args.device)
    train = textures_dataset(n_per_class=120, split="train", seed=1)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(3):  # a briefly trained model: realistic clean accuracy and attack behaviour
        train_epoch(model, train, opt, batch_size=64, seed=epoch, device=torch.device(args.device))
    model.eval()
    print(f"{len(x)} images 32x32, LeNet, {len(PAPER_EPS_GRID)}-point grid, batch {args.batch_size}, "
          f"{args.threads} thread(s), device {args.device}")
    with torch.no_grad():
        clean = float((model(x).argmax(1) == y).float().mean())
    print(f"clean accuracy {clean:.3f}")
    print(f"{'attack':<14}{'loop s':>9}{'sweep s':>9}{'loop img/s':>12}{'sweep img/s':>13}{'ratio':>8}"
          f"{'max acc diff':>14}")
    n = len(x)
    loops = {}
    for attack, nested in (("fgsm", False), ("pgd", False), ("pgd", True)):
        if attack not in loops:
            loops[attack] = timed(lambda: per_eps_loop(model, x, y, attack, args.batch_size, args.steps))
        (loop_acc, loop_s) = loops[attack]
        res, sweep_s = timed(lambda: epsilon_sweep(model, (x, y), PAPER_EPS_GRID, attack=attack, steps=args.steps,
                                                   rel_step_size=2.5 / args.steps, random_start=False, nested=nested,
                                                   batch_size=args.batch_size, compare_fgsm=False))
        name = attack + ("-nested" if nested else "")
        print(f"{name:<14}{loop_s:>9.2f}{sweep_s:>9.2f}{n / loop_s:>12.1f}{n / sweep_s:>13.1f}"
              f"{loop_s / sweep_s:>7.2f}x{np.abs(loop_acc - res.accuracy).max():>14.4f}")


if __name__ == "__main__":
    main()
