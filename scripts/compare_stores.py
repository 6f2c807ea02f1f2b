"""Compare two results stores run by run, unit by unit, column by column.

Used to check that a change to the engine leaves stored per-sample results identical (e.g. the
demo's store made before and after)::

    python scripts/compare_stores.py robustlab-demo-before/store robustlab-demo-after/store

Runs are paired by id, or with ``--by model-benchmark`` by (model, benchmark, attack) (when the two
stores evaluated data at different paths, which changes run ids). For every pair it compares
the unit keys, each unit's column names, dtypes, shapes and values (NaN equal to NaN) and the
stored metrics, and prints one line per run; the exit status is 1 when anything differs or a
run is missing from one side.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from robustlab.store import open_store


def compare_columns(a: dict, b: dict) -> list[str]:
    """Differences between two runs' ``{unit: {column: array}}`` (empty when identical)."""
    problems = []
    if sorted(a) != sorted(b):
        problems.append(f"units differ: only in A {sorted(set(a) - set(b))[:3]}, only in B {sorted(set(b) - set(a))[:3]}")
    for unit in sorted(set(a) & set(b)):
        if sorted(a[unit]) != sorted(b[unit]):
            problems.append(f"{unit}: columns {sorted(a[unit])} vs {sorted(b[unit])}")
            continue
        for name in a[unit]:
            x, y = np.asarray(a[unit][name]), np.asarray(b[unit][name])
            if x.shape != y.shape or (x.dtype != y.dtype and not (x.dtype.kind == y.dtype.kind == "U")):
                problems.append(f"{unit}/{name}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}")
            elif not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                problems.append(f"{unit}/{name}: {int((x != y).sum())} values differ")
    return problems


def compare_metrics(a: list, b: list) -> list[str]:
    ta = {(m, s): v for m, s, v in a}
    tb = {(m, s): v for m, s, v in b}
    diffs = [k for k in set(ta) | set(tb)
             if not (k in ta and k in tb and (ta[k] == tb[k] or (math.isnan(ta[k]) and math.isnan(tb[k]))))]
    return [f"{len(diffs)} metric rows differ, e.g. {sorted(diffs)[:3]}"] if diffs else []


def run_pairing_key(run) -> str:
    """A run's name across two stores whose data lay at different paths: model, benchmark and
    the config values that tell runs of one model apart (the attack of an adversarial run)."""
    extra = [f"{k}={run.config[k]}" for k in ("attack",) if run.config.get(k) is not None]
    return " / ".join([run.model, run.benchmark, *extra])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--by", choices=("id", "model-benchmark"), default="id")
    args = parser.parse_args(argv)
    failed = False
    key = (lambda r: r.id) if args.by == "id" else run_pairing_key
    with open_store(args.a) as sa, open_store(args.b) as sb:
        runs_a = {key(r): r for r in sa.list_runs()}
        runs_b = {key(r): r for r in sb.list_runs()}
        for rid in sorted(set(runs_a) | set(runs_b)):
            if rid not in runs_a or rid not in runs_b:
                print(f"{rid}: only in {'A' if rid in runs_a else 'B'}")
                failed = True
                continue
            ida, idb = runs_a[rid].id, runs_b[rid].id
            pa, pb = sa.read_predictions(ida), sb.read_predictions(idb)
            problems = compare_columns(pa, pb) + compare_metrics(sa.get_metrics(ida), sb.get_metrics(idb))
            n_values = sum(np.asarray(c).size for cols in pa.values() for c in cols.values())
            status = "identical" if not problems else "DIFFERENT: " + "; ".join(problems[:5])
            print(f"{ida} {runs_a[rid].benchmark:<22} {runs_a[rid].model:<16} {len(pa):4d} units "
                  f"{sum(len(c) for c in pa.values()):3d} columns {n_values:9d} values: {status}")
            failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
