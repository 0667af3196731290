"""kubetune TPE vs Optuna TPESampler (univariate, multivariate) vs hyperopt TPE: quality and time per suggestion.

Quality: best value after 100 and 300 trials (one run of 300 per seed, read at both budgets), median and IQR
over seeds, on Branin, Hartmann6, Ackley-5d, Levy-4d and Styblinski-Tang-8d (written below and in tpe_own_runs.py
from their definitions in Surjanovic & Bingham's Virtual Library of Simulation Experiments).
Timing: CPU and wall time of one suggestion after n trials of the searcher's own optimisation run of a
10-parameter shifted sphere (tpe_own_runs.py's sphere10: one run per searcher and variant, paused at each n for
--timing-reps asks told failed, so the model keeps n observations); Optuna times study.ask() with fixed
distributions, kubetune times Study.ask() through the Python binding. tpe_own_runs.py has more functions, the
p90 and the whole-run time; Optuna's own run to 5,000 trials takes minutes.

Peers are optional (pip install '.[peers]'); missing ones are skipped. Example (all at once):
    PYTHONPATH=python .venv/bin/python benchmarks/python/tpe_vs_peers.py --seeds 20 --out /tmp/tpe.json
The slow peers can run separately and be merged (--methods optuna optuna-mv hyperopt --skip-timing --out
peers.json, then --methods kubetune kubetune-mv --merge peers.json).
Fewer seeds / functions for a quick look:
    ... tpe_vs_peers.py --seeds 3 --functions branin hartmann6 --timing-n 100 1000
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

import kubetune as kt
from tpe_own_runs import hartmann6, measure

# ----------------------------------------------------------------------------------------------- functions


def branin(x):
    a, b, c, r, s, t = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi, 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1 - t) * math.cos(x[0]) + s


def ackley(x):
    x = np.asarray(x)
    d = len(x)
    return float(-20 * np.exp(-0.2 * np.sqrt(np.sum(x**2) / d)) - np.exp(np.sum(np.cos(2 * np.pi * x)) / d)
                 + 20 + math.e)


def levy(x):
    w = 1 + (np.asarray(x) - 1) / 4
    t1 = np.sin(np.pi * w[0]) ** 2
    t2 = np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:-1] + 1) ** 2))
    t3 = (w[-1] - 1) ** 2 * (1 + np.sin(2 * np.pi * w[-1]) ** 2)
    return float(t1 + t2 + t3)


def styblinski_tang(x):
    x = np.asarray(x)
    return float(0.5 * np.sum(x**4 - 16 * x**2 + 5 * x))


# name -> (function, bounds, known minimum)
FUNCTIONS = {
    "branin": (branin, [(-5.0, 10.0), (0.0, 15.0)], 0.397887357729739),
    "hartmann6": (hartmann6, [(0.0, 1.0)] * 6, -3.32236801141551),
    "ackley5": (ackley, [(-32.768, 32.768)] * 5, 0.0),
    "levy4": (levy, [(-10.0, 10.0)] * 4, 0.0),
    "styblinski_tang8": (styblinski_tang, [(-5.0, 5.0)] * 8, -39.16616570377142 * 8),
}

# ----------------------------------------------------------------------------------------------- runners


def run_kubetune(f, bounds, n, seed, multivariate):
    space = kt.SearchSpace()
    for i, (lo, hi) in enumerate(bounds):
        space.add_float(f"x{i}", lo, hi)
    study = kt.Study(space, searcher=kt.TPE(multivariate=multivariate), seed=seed)
    ys = []
    for _ in range(n):
        t = study.ask()
        y = f([t.params[f"x{i}"] for i in range(len(bounds))])
        study.tell(t, y)
        ys.append(y)
    return ys


def run_optuna(f, bounds, n, seed, multivariate):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed, multivariate=multivariate)
    study = optuna.create_study(sampler=sampler)
    ys = []

    def objective(trial):
        y = f([trial.suggest_float(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)])
        ys.append(y)
        return y

    study.optimize(objective, n_trials=n)
    return ys


def run_hyperopt(f, bounds, n, seed):
    import hyperopt

    space = [hyperopt.hp.uniform(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)]
    trials = hyperopt.Trials()
    hyperopt.fmin(lambda x: f(list(x)), space, algo=hyperopt.tpe.suggest, max_evals=n, trials=trials,
                  rstate=np.random.default_rng(seed), show_progressbar=False)
    return list(trials.losses())


def have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def methods(selected):
    out = {}
    if "kubetune" in selected:
        out["kubetune"] = lambda f, b, n, s: run_kubetune(f, b, n, s, False)
    if "kubetune-mv" in selected:
        out["kubetune-mv"] = lambda f, b, n, s: run_kubetune(f, b, n, s, True)
    if have("optuna"):
        if "optuna" in selected:
            out["optuna"] = lambda f, b, n, s: run_optuna(f, b, n, s, False)
        if "optuna-mv" in selected:
            out["optuna-mv"] = lambda f, b, n, s: run_optuna(f, b, n, s, True)
    if have("hyperopt") and "hyperopt" in selected:
        out["hyperopt"] = run_hyperopt
    return out


# ----------------------------------------------------------------------------------------------- timing


def time_own_run(method, multivariate, sizes, reps, n_threads=1):
    """{n: (CPU s, wall s)}: median ask after n trials of method's own sphere10 run (see tpe_own_runs.py)."""
    r = measure(method, "sphere10", multivariate, sizes, reps, total=0, seed=1, n_threads=n_threads)
    return {int(n): (a["cpu_median_ms"] / 1e3, a["wall_median_ms"] / 1e3) for n, a in r["ask"].items()}


# ----------------------------------------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed0", type=int, default=0, help="first seed (seeds seed0 .. seed0 + seeds - 1)")
    ap.add_argument("--budgets", type=int, nargs="+", default=[100, 300])
    ap.add_argument("--functions", nargs="+", default=list(FUNCTIONS))
    ap.add_argument("--methods", nargs="+", default=["kubetune", "kubetune-mv", "optuna", "optuna-mv", "hyperopt"])
    ap.add_argument("--timing-n", type=int, nargs="+", default=[100, 1000, 5000])
    ap.add_argument("--timing-reps", type=int, default=5)
    ap.add_argument("--timing-threads", type=int, nargs="+", default=[1],
                    help="also time univariate kubetune with these n_threads (columns kubetune-<t>t; read wall time)")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--out", default=None, help="write raw results as JSON")
    ap.add_argument("--merge", nargs="*", default=[],
                    help="JSON files of earlier runs (e.g. peers run separately) whose quality results join the table")
    args = ap.parse_args(argv)

    results = {"args": vars(args), "quality": {}, "timing": {}}

    def save():
        if args.out:
            with open(args.out, "w") as fh:
                json.dump(results, fh, indent=1)

    if not args.skip_quality:
        ms = methods(set(args.methods))
        n = max(args.budgets)
        for fname in args.functions:
            f, bounds, fmin = FUNCTIONS[fname]
            for mname, run in ms.items():
                bests = {b: [] for b in args.budgets}
                t0 = time.perf_counter()
                for seed in range(args.seed0, args.seed0 + args.seeds):
                    ys = run(f, bounds, n, seed)
                    for b in args.budgets:
                        bests[b].append(float(np.min(ys[:b])))
                results["quality"].setdefault(fname, {})[mname] = {str(b): v for b, v in bests.items()}
                print(f"{fname:17s} {mname:12s} " + "  ".join(
                    f"n={b}: median {np.median(v):.4g} IQR [{np.percentile(v, 25):.4g}, {np.percentile(v, 75):.4g}]"
                    for b, v in bests.items()) + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
                save()

    for path in args.merge:
        with open(path) as fh:
            old = json.load(fh)
        for fname, per in old.get("quality", {}).items():
            for mname, v in per.items():
                results["quality"].setdefault(fname, {}).setdefault(mname, v)
        for n, row in old.get("timing", {}).items():
            results["timing"].setdefault(n, row)

    if not args.skip_timing:
        columns = {}
        for mv in (False, True):
            tag = "-mv" if mv else ""
            columns["kubetune" + tag] = time_own_run("kubetune", mv, args.timing_n, args.timing_reps)
            if have("optuna"):
                columns["optuna" + tag] = time_own_run("optuna", mv, args.timing_n, args.timing_reps)
        for t in args.timing_threads:
            if t != 1:
                columns[f"kubetune-{t}t"] = time_own_run("kubetune", False, args.timing_n, args.timing_reps, t)
        for n in args.timing_n:
            row = {m: col[n] for m, col in columns.items()}
            results["timing"][str(n)] = row
            print(f"n={n:5d} " + "  ".join(f"{k}: {v[0] * 1e3:.3f} ms cpu / {v[1] * 1e3:.3f} ms wall"
                                           for k, v in row.items()), flush=True)
        save()

    # Markdown summary.
    if results["quality"]:
        print("\n| function | budget | " + " | ".join(m for m in next(iter(results["quality"].values()))) + " |")
        for fname, per in results["quality"].items():
            for b in args.budgets:
                cells = []
                for m, v in per.items():
                    xs = v[str(b)]
                    cells.append(f"{np.median(xs):.4g} [{np.percentile(xs, 25):.3g}, {np.percentile(xs, 75):.3g}]")
                print(f"| {fname} | {b} | " + " | ".join(cells) + " |")
        for ours, theirs in (("kubetune", "optuna"), ("kubetune-mv", "optuna-mv"), ("kubetune-mv", "optuna"),
                             ("kubetune", "hyperopt"), ("kubetune-mv", "hyperopt")):
            wins, ties = [], []
            for fname, per in results["quality"].items():
                for b in args.budgets:
                    if ours in per and theirs in per:
                        a, c = np.array(per[ours][str(b)]), np.array(per[theirs][str(b)])
                        wins.append(np.median(a) <= np.median(c))
                        # "not worse" in the statistical sense: the medians differ by less than half the
                        # larger interquartile range
                        iqr = max(np.subtract(*np.percentile(a, [75, 25])), np.subtract(*np.percentile(c, [75, 25])))
                        ties.append(np.median(a) <= np.median(c) + 0.5 * iqr)
            if wins:
                print(f"{ours} median best <= {theirs} median best on {sum(wins)} of {len(wins)} pairs; "
                      f"within half an IQR or better on {sum(ties)} of {len(ties)}")
    if results["timing"]:
        print("\n| n | " + " | ".join(next(iter(results["timing"].values()))) + " |")
        for n, row in results["timing"].items():
            print(f"| {n} | " + " | ".join(f"{v[0] * 1e3:.3f} / {v[1] * 1e3:.3f}" for v in row.values())
                  + " |  (CPU / wall ms)")
        for n, row in results["timing"].items():
            if "optuna" in row:
                print(f"n={n}: speed-up vs Optuna TPE {row['optuna'][0] / row['kubetune'][0]:.0f}x (univariate), "
                      f"{row['optuna-mv'][0] / row['kubetune-mv'][0]:.0f}x (multivariate), CPU time")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
