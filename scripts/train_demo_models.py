"""Re-train the demo's shipped models from a seed (same as `robustlab demo train`).

Usage: python scripts/train_demo_models.py [OUT_DIR] [--seed 0]
Writes OUT_DIR/<model>.pt for each of cnn, cnn-noise, baseline, detector (or --models) and
models.json (default: the package's weights folder). One torch thread: bit-reproducible.
"""

from __future__ import annotations

import argparse

from robustlab.demo.models import DEMO_MODELS
from robustlab.demo.training import train_demo_models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=None, help="output folder (default: robustlab/demo/weights)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=list(DEMO_MODELS), choices=DEMO_MODELS)
    args = parser.parse_args()
    train_demo_models(args.out_dir, args.seed, models=tuple(args.models))


if __name__ == "__main__":
    main()
