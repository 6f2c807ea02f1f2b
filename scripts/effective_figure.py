"""Draw the effective-robustness figure of docs/effective-robustness.md and docs/natural-shifts.md.

    python scripts/effective_figure.py ROBUSTNESS_TOP1S_CSV docs/images/effective-robustness-imagenet-r.png

The report's own figure (robustlab.report.effective.draw_trend), with the imagenet-testbed's table as
the reference points and, as "runs", the table's rows of four models under the names robustlab gives
them: CLIP ViT-B/32 zero-shot (open_clip:ViT-B-32:openai), ResNet-50 and ResNet-152 (torchvision:) and
EfficientNet-L2 Noisy Student (timm:). The numbers are the testbed's, not measured here.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from robustlab.engine.evaluation import EvaluationResult
from robustlab.report.effective import draw_trend, shift_groups

RUNS = {"vit_b_32_clip_zeroshot": "open_clip:ViT-B-32:openai", "resnet50": "torchvision:resnet50:IMAGENET1K_V1",
        "resnet152": "torchvision:resnet152:IMAGENET1K_V1", "efficientnet-l2-noisystudent": "timm:tf_efficientnet_l2.ns"}
COLUMNS = ("val-on-imagenet-r-classes", "imagenet-r")


def main(table: str, out: str) -> None:
    rows = {r["model"]: r for r in csv.DictReader(open(table, encoding="utf-8"))}
    runs = []
    for k, (row_name, model) in enumerate(RUNS.items()):
        row = rows[row_name]
        pair = {"shift": "imagenet-r", "original_set": "ImageNet val, ImageNet-R's 200 classes",
                "original": float(row[COLUMNS[0]]) / 100, "shifted": float(row[COLUMNS[1]]) / 100,
                "original_n": 10000, "shifted_n": 30000, "testbed_columns": list(COLUMNS)}
        runs.append(EvaluationResult(run_id=f"{k:016x}", model=model, benchmark="imagenet-r", dataset="", config={},
                                     status="complete", metrics=[], summary={"accuracy_pair": pair}))
    group = shift_groups(runs, reference_points=table)[0]
    fig, _ = draw_trend(group)
    fig.savefig(Path(out), dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main(*sys.argv[1:3])
