"""The recorded parity of the torch backend (parity.json) and the harness's Markdown table of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from robustlab.corruptions import list_corruptions
from robustlab.corruptions.torch.parity import load_parity, parity_status

ROOT = Path(__file__).resolve().parents[2]


def test_every_corruption_is_recorded_within_its_bounds_with_both_checks():
    record = load_parity()
    assert sorted(record["corruptions"]) == sorted(list_corruptions())
    assert {n: parity_status(n, record) for n in list_corruptions()} == {n: "ok" for n in list_corruptions()}


def test_table_prints_the_record_as_markdown_without_measuring():
    proc = subprocess.run([sys.executable, str(ROOT / "perf" / "parity_torch.py"), "--table"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and not line.startswith("| corruption")]
    assert len(rows) == len(list_corruptions())
    assert all(row.rstrip().endswith("| yes |") for row in rows)
    assert "pixels:" not in proc.stderr    # nothing measured
