"""Medians over rounds of tpe_own_runs.py results that hold both searchers (--methods kubetune optuna).

Per function, variant and figure (time per ask at each n, the whole-run total): the median of each searcher's
times over the rounds, the median of the rounds' ratios (Optuna / kubetune, each round's pair measured back to
back) and their range. Example:
    .venv/bin/python benchmarks/python/tpe_rounds.py benchmarks/out/tpe_own_runs_paired_round*.json
"""
from __future__ import annotations

import argparse
import json
import statistics


def rows(paths):
    out = {}
    for path in paths:
        with open(path) as f:
            runs = json.load(f)["runs"]
        for key, run in runs.items():
            if "kubetune" not in run or "optuna" not in run:
                continue
            fn, variant = key.split("|")[:2]
            kt, op = run["kubetune"], run["optuna"]
            for n in sorted(set(kt["ask"]) & set(op["ask"]), key=int):
                out.setdefault((fn, variant, n), []).append((kt["ask"][n]["wall_median_ms"], op["ask"][n]["wall_median_ms"]))
            out.setdefault((fn, variant, "total"), []).append((kt["total_s"], op["total_s"]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="tpe_own_runs.py --out files, one per round")
    args = ap.parse_args(argv)
    print("| function | variant | n | kubetune (median) | Optuna (median) | ratio: median of rounds | range |")
    print("|---|---|---|---|---|---|---|")
    for (fn, variant, n), pairs in rows(args.files).items():
        ratios = [o / k for k, o in pairs]
        unit = "s" if n == "total" else "ms"
        label = "1,000-trial run" if n == "total" else f"{int(n):,}"
        print(f"| {fn} | {variant} | {label} | {statistics.median(k for k, _ in pairs):.3f} {unit} | "
              f"{statistics.median(o for _, o in pairs):.3g} {unit} | **{statistics.median(ratios):.0f}×** | "
              f"{min(ratios):.0f}–{max(ratios):.0f}× |")


if __name__ == "__main__":
    main()
