"""Write src/robustlab/selfcheck/golden.npz, the data of `robustlab doctor`'s self-check.

Golden corruption cells are copied from the test fixtures (outputs of imagecorruptions 1.1.2 in the
pinned reference environment, see perf/refenv.py): seedable corruptions whose robustlab output equals
the reference exactly, one image, a few severities. The codec cell is a fixed 8-frame sequence and
the sha256 of its mp4 as robustlab.data.h264 encodes it on the locked stack, with the libx264 core
that made it (another x264 build may encode other bytes, which doctor reports, not fails).

    python scripts/make_selfcheck.py
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from robustlab.corruptions import corrupt, get_corruption  # noqa: E402
from robustlab.data.h264 import encoder_record  # noqa: E402
from robustlab.doctor import CODEC_SHAPE, encode_codec_frames  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "corruptions"
OUT = ROOT / "src" / "robustlab" / "selfcheck" / "golden.npz"
CELLS = {"golden.npz": [("colour_36x44", n, 5) for n in ("gaussian_noise", "glass_blur", "zoom_blur", "fog", "contrast",
                                                        "elastic_transform", "pixelate", "jpeg_compression", "spatter")],
         "small_golden.npz": [("astronaut_32x32", "motion_blur", 4), ("chelsea_32x40", "defocus_blur", 5)]}


def main() -> int:
    arrays, cells = {}, []
    for fixture, chosen in CELLS.items():
        with np.load(FIXTURES / fixture) as data:
            meta = json.loads(data["meta"].tobytes().decode()) if "meta" in data.files else {}
            seed = meta.get("seed", 0)
            for image, name, severity in chosen:
                key = f"{image}/{name}/{severity}" + ("/0" if fixture == "small_golden.npz" else "")
                want = data[key]
                arrays[f"input/{image}"] = data[f"input/{image}"]
                got = corrupt(data[f"input/{image}"], name, severity, rng=np.random.RandomState(seed))
                if not get_corruption(name).seedable or not np.array_equal(got, want):
                    raise SystemExit(f"{key}: not exact on this stack; choose another cell")
                arrays[f"output/{image}/{name}/{severity}"] = want
                cells.append([image, name, severity, seed])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.mp4"
        encode_codec_frames(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    record = encoder_record()
    meta = {"cells": cells, "codec": {"shape": list(CODEC_SHAPE), "sha256": digest, "libx264": record["libx264"],
                                      "x264_asm": record["x264_asm"]},
            "made_by": "scripts/make_selfcheck.py"}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes): {len(cells)} corruption cells, codec sha256 {digest[:12]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
