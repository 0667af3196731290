"""Two builds of kubetune's TPE against each other, interleaved: the engine's own speed-up, free of the machine's
slow and fast phases (on a shared box they move Python-heavy and C++-heavy work by different factors, so a ratio
against a peer timed at another hour says little).

Each pair runs a fresh process per build, alternately, with tpe_own_runs.py's own measurement (own_run, protocol
"flow"): its function and variant, a 1,000-trial run (ask + evaluate + tell, as a user runs it) and the median
of the next 30 asks. Printed: each build's medians and the median (and range) of the pairs' ratios, old / new.
Example:
    .venv/bin/python benchmarks/python/tpe_engine_ab.py --old /tmp/old/python --new python --pairs 6
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def one_run(fname: str, variant: str, total: int, reps: int) -> tuple[float, float]:
    """(median ask after `total` trials in ms, wall seconds of the first `total` trials)."""
    sys.path.insert(0, HERE)
    import tpe_own_runs as T

    r = T.measure("kubetune", fname, variant == "multivariate", [total], reps, total, seed=0)
    return r["ask"][str(total)]["wall_median_ms"], r["total_s"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="python/ folder of the build to compare against")
    ap.add_argument("--new", required=True, help="python/ folder of the build under test")
    ap.add_argument("--functions", nargs="+", default=["sphere10", "hartmann6", "mixed"])
    ap.add_argument("--variants", nargs="+", default=["multivariate", "univariate"],
                    choices=["univariate", "multivariate"])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--total", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # (function, variant): one run, printed
    args = ap.parse_args(argv)
    if args.child:
        ask, loop = one_run(args.child[0], args.child[1], args.total, args.reps)
        print(ask, loop)
        return
    for fname in args.functions:
        for variant in args.variants:
            res = {"old": [], "new": []}
            for _ in range(args.pairs):
                for build in ("old", "new"):
                    env = dict(os.environ, PYTHONPATH=getattr(args, build))
                    out = subprocess.run([sys.executable, __file__, "--child", fname, variant, "--total",
                                          str(args.total), "--reps", str(args.reps), "--old", "-", "--new", "-"],
                                         env=env, check=True, capture_output=True, text=True).stdout.split()
                    res[build].append((float(out[0]), float(out[1])))
            cells = []
            for i, what in ((0, f"ask at n = {args.total}"), (1, f"{args.total}-trial run")):
                old = [r[i] for r in res["old"]]
                new = [r[i] for r in res["new"]]
                ratios = sorted(o / n for o, n in zip(old, new))
                cells.append(f"{what}: {statistics.median(old):.4g} -> {statistics.median(new):.4g} "
                             f"({statistics.median(ratios):.2f}x, {ratios[0]:.2f}-{ratios[-1]:.2f})")
            print(f"{fname:10s} {variant:13s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
