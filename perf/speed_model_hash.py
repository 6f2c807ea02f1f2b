"""Time of a model's content hash (the run identity of issue 25) for ResNet-50-sized weights.

Target: at most 2 s for ResNet-50 (25.6 M parameters, 102 MB of float32 weights). The hash is
computed once per run (``robustlab evaluate`` builds the model once, hashes it, and hands the
same model to the executor). The network is torchvision's ResNet-50 with random weights (no
download); the cost of hashing does not depend on the values.

    python perf/speed_model_hash.py [--repeats 3] [--model resnet50] [--device cpu]

Prints the parameter count, the bytes hashed, the best and median time of
:func:`robustlab.models.identity.model_hash` (weights, classes and settings), and the part
spent on the weights alone (:func:`robustlab.models.identity.hash_state`).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="resnet50", help="torchvision model name (random weights)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    from robustlab.models import load_model
    from robustlab.models.identity import hash_state, model_hash

    model = load_model(f"torchvision:{args.model}:none", device=args.device)
    n_params = sum(p.numel() for p in model.parameters())
    n_bytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    full, weights = [], []
    digest = None
    for _ in range(args.repeats):
        start = time.perf_counter()
        now = model_hash(model)
        full.append(time.perf_counter() - start)
        assert digest in (None, now), "the hash must not change between calls"
        digest = now
        start = time.perf_counter()
        hash_state(hashlib.sha256(), model)
        weights.append(time.perf_counter() - start)
    print(f"{args.model} on {args.device}: {n_params / 1e6:.1f} M parameters, {n_bytes / 1e6:.0f} MB in the state dict")
    print(f"model_hash: best {min(full):.3f} s, median {statistics.median(full):.3f} s (target <= 2 s)")
    print(f"weights alone: best {min(weights):.3f} s ({n_bytes / 1e6 / min(weights):.0f} MB/s)")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; digest {digest[:16]}")


if __name__ == "__main__":
    main()
