"""kubetune TPE vs Optuna TPESampler on histories from each searcher's OWN optimisation run, in one process each.

Each searcher optimises the function itself (ask, evaluate, tell). When n trials have finished (n in --sizes),
the asks of the next --reps trials of the run are timed (protocol "flow", the default: each of them is told its
value like every other trial, so whatever a searcher keeps from one ask to the next serves as in a real run):
median and p90 wall time per ask, and the median CPU time (time.process_time; on a loaded machine the wall time
also counts the time the process waited for a core). Protocol "failed" (--protocol failed, the one of the first
2026-12-01 figures) instead pauses the run for --reps asks told *failed* (both TPEs ignore failed trials, so the
model keeps its n observations and a searcher that memoises its previous fit looks faster than it is in a run).
Also the wall (and CPU) time of the first --total trials (ask + evaluate + tell; with "failed", the timed
pauses left out) and the best value found by then. A history of uniformly random points is easy for kubetune's
windowed scoring (most kernels are far from any candidate); a searcher's own history gathers near the optimum,
which is the case users see.

Functions (all minimised; every objective is plain Python/numpy, the same for both searchers):
  sphere10   sum (x_i - 1)^2, x_i in [-5, 5], 10 floats
  hartmann6  Hartmann 6-d on [0, 1]^6 (Surjanovic & Bingham's Virtual Library of Simulation Experiments)
  mixed      6 floats in [-5, 5] (sum (x_i - 1)^2) + log-float lr in [1e-5, 1] ((log10 lr + 2)^2) + int
             units in [1, 64] (((units - 16) / 8)^2) + 4-way categorical kind (offsets a 1, b 0, c 0.5, d 2)
Variants: univariate and multivariate (kt.TPE(multivariate=...), TPESampler(multivariate=...), otherwise
default settings on both sides; Optuna through study.ask(fixed distributions) / study.tell).

Optuna is slow (minutes for its 5,000-trial runs): its results go to --peer-cache and are reused by later runs
with the same function, variant, seed, reps and total, so the kubetune side can be rerun alone:
    PYTHONPATH=python .venv/bin/python benchmarks/python/tpe_own_runs.py --functions hartmann6 mixed \\
        --sizes 100 1000 --peer-cache benchmarks/out/tpe_own_runs_optuna.json
    PYTHONPATH=python .venv/bin/python benchmarks/python/tpe_own_runs.py --functions sphere10 \\
        --sizes 100 1000 5000 --peer-cache benchmarks/out/tpe_own_runs_optuna.json
(--methods kubetune times kubetune only and reads Optuna from the cache; --methods optuna fills the cache.)
This module imports kubetune and optuna lazily: an Optuna-only run does not load the extension.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import sys
import time
import warnings

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "out"

# ----------------------------------------------------------------------------------------------- functions

_H6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H6_A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
                  [17, 8, 0.05, 10, 0.1, 14]])
_H6_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                         [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])


def hartmann6(x):
    x = np.asarray(x)
    return float(-np.sum(_H6_ALPHA * np.exp(-np.sum(_H6_A * (x - _H6_P) ** 2, axis=1))))


def _floats(p, d):
    return [p[f"x{i}"] for i in range(d)]


def _shifted_sphere(xs):
    return sum((x - 1.0) ** 2 for x in xs)


_KIND_OFFSET = {"a": 1.0, "b": 0.0, "c": 0.5, "d": 2.0}


def _mixed(p):
    return (_shifted_sphere(_floats(p, 6)) + (math.log10(p["lr"]) + 2.0) ** 2 + ((p["units"] - 16) / 8.0) ** 2
            + _KIND_OFFSET[p["kind"]])


# Parameters: (name, "float", low, high, log) | (name, "int", low, high) | (name, "cat", choices).
_X10 = [(f"x{i}", "float", -5.0, 5.0, False) for i in range(10)]
FUNCTIONS = {
    "sphere10": (_X10, lambda p: _shifted_sphere(_floats(p, 10))),
    "hartmann6": ([(f"x{i}", "float", 0.0, 1.0, False) for i in range(6)], lambda p: hartmann6(_floats(p, 6))),
    "mixed": (_X10[:6] + [("lr", "float", 1e-5, 1.0, True), ("units", "int", 1, 64),
                          ("kind", "cat", list(_KIND_OFFSET))], _mixed),
}

# ----------------------------------------------------------------------------------------------- searchers


class KubetuneRun:
    """kt.Study driven by ask / tell, as a user runs it."""

    def __init__(self, params, seed, multivariate, n_threads=1):
        import kubetune as kt

        space = kt.SearchSpace()
        for name, kind, *spec in params:
            if kind == "float":
                space.add_float(name, spec[0], spec[1], log=spec[2])
            elif kind == "int":
                space.add_int(name, spec[0], spec[1])
            else:
                space.add_categorical(name, spec[0])
        self.study = kt.Study(space, searcher=kt.TPE(multivariate=multivariate, n_threads=n_threads), seed=seed)

    def ask(self):
        t = self.study.ask()
        return t, t.params

    def tell(self, t, y):
        self.study.tell(t, y)

    def fail(self, t):
        self.study.tell(t, state="failed")  # ignored by TPE: the model keeps its n observations


class OptunaRun:
    """optuna.Study with TPESampler driven by study.ask(fixed distributions) / study.tell."""

    def __init__(self, params, seed, multivariate):
        import optuna
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.dists = {}
        for name, kind, *spec in params:
            if kind == "float":
                self.dists[name] = FloatDistribution(spec[0], spec[1], log=spec[2])
            elif kind == "int":
                self.dists[name] = IntDistribution(spec[0], spec[1])
            else:
                self.dists[name] = CategoricalDistribution(spec[0])
        self.failed = optuna.trial.TrialState.FAIL
        self.study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed, multivariate=multivariate))

    def ask(self):
        t = self.study.ask(self.dists)
        return t, t.params

    def tell(self, t, y):
        self.study.tell(t, y)

    def fail(self, t):
        self.study.tell(t, state=self.failed)


def searcher(method, params, seed, multivariate, n_threads=1):
    if method == "kubetune":
        return KubetuneRun(params, seed, multivariate, n_threads)
    return OptunaRun(params, seed, multivariate)


# ----------------------------------------------------------------------------------------------- the run


def summary(wall, cpu):
    return {"wall_median_ms": float(np.median(wall)) * 1e3, "wall_p90_ms": float(np.percentile(wall, 90)) * 1e3,
            "cpu_median_ms": float(np.median(cpu)) * 1e3, "reps": len(wall)}


def time_asks(run, reps):
    """Protocol "failed": reps asks on the current history, each told failed; wall and CPU seconds of each."""
    wall, cpu = [], []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        t, _ = run.ask()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        run.fail(t)
    return summary(wall, cpu)


def own_run(run, objective, sizes, reps, total, protocol="flow"):
    """Optimise until max(sizes, total) trials finished (+ reps with protocol "flow"); time asks at every n in
    sizes; time the first total. Protocol "flow": the asks of trials n+1 .. n+reps of the run itself (each told
    its value, as every other trial), so whatever a searcher carries from one ask to the next is used as in a real
    run; "failed": reps extra asks on the history of n trials, told failed (the history does not change)."""
    sizes = set(sizes)
    n_max = max(max(sizes) + (reps if protocol == "flow" else 0), total)
    out = {"ask": {}, "load_start": os.getloadavg()[0], "protocol": protocol}
    window = {}  # protocol flow: n -> (wall, cpu) lists being filled
    loop_s, loop_cpu_s, best = 0.0, 0.0, math.inf
    for n in range(n_max + 1):
        if n in sizes:
            if protocol == "flow":
                window[n] = ([], [])
            else:
                out["ask"][str(n)] = time_asks(run, reps)
        if n == total:
            out["total_s"], out["total_cpu_s"], out["total_best"] = loop_s, loop_cpu_s, best
        if n == n_max:
            break
        c0, w0 = time.process_time(), time.perf_counter()
        t, p = run.ask()
        ask_cpu, ask_wall = time.process_time() - c0, time.perf_counter() - w0
        y = objective(p)
        run.tell(t, y)
        loop_s += time.perf_counter() - w0
        loop_cpu_s += time.process_time() - c0
        best = min(best, y)
        for start, (wall, cpu) in list(window.items()):
            wall.append(ask_wall)
            cpu.append(ask_cpu)
            if len(wall) == reps:
                out["ask"][str(start)] = summary(wall, cpu)
                del window[start]
    out["load_end"] = os.getloadavg()[0]
    return out


def measure(method, fname, multivariate, sizes, reps, total, seed, n_threads=1, protocol="flow"):
    params, objective = FUNCTIONS[fname]
    return own_run(searcher(method, params, seed, multivariate, n_threads), objective, sizes, reps, total, protocol)


# ----------------------------------------------------------------------------------------------- main


def cache_key(fname, variant, seed, reps, total, protocol="failed"):
    key = f"{fname}|{variant}|seed={seed}|reps={reps}|total={total}"
    return key if protocol == "failed" else key + f"|protocol={protocol}"  # older caches: protocol failed


def covers(result, sizes):
    return result is not None and all(str(n) in result["ask"] for n in sizes)


def load_json(path):
    if path and pathlib.Path(path).exists():
        with open(path) as fh:
            return json.load(fh)
    return {}


def save_json(path, data):
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1)


def ratio(a, b):
    return f"{a / b:.0f}x" if a is not None and b else "-"


def cell(v, fmt="{:.3f}"):
    return fmt.format(v) if v is not None else "-"


def print_tables(rows):
    print("\n| function | variant | n | kubetune ms/ask: wall median / p90, CPU median "
          "| Optuna ms/ask: wall median / p90, CPU median | ratio: wall, CPU |")
    print("|---|---|---|---|---|---|")
    for (fname, variant), r in rows.items():
        kt_r, op_r = r.get("kubetune"), r.get("optuna")
        for n in sorted({int(n) for x in (kt_r, op_r) if x for n in x["ask"]}):
            k = kt_r["ask"].get(str(n)) if kt_r else None
            o = op_r["ask"].get(str(n)) if op_r else None
            print(f"| {fname} | {variant} | {n:,} | "
                  + (f"{k['wall_median_ms']:.3f} / {k['wall_p90_ms']:.3f}, {k['cpu_median_ms']:.3f}" if k else "-")
                  + " | "
                  + (f"{o['wall_median_ms']:.2f} / {o['wall_p90_ms']:.2f}, {o['cpu_median_ms']:.2f}" if o else "-")
                  + f" | {ratio(o and o['wall_median_ms'], k and k['wall_median_ms'])}, "
                  + f"{ratio(o and o['cpu_median_ms'], k and k['cpu_median_ms'])} |")
    print("\n| function | variant | kubetune total s: wall, CPU (best) | Optuna total s: wall, CPU (best) "
          "| ratio: wall, CPU |")
    print("|---|---|---|---|---|")
    for (fname, variant), r in rows.items():
        kt_r, op_r = r.get("kubetune") or {}, r.get("optuna") or {}
        print(f"| {fname} | {variant} | {cell(kt_r.get('total_s'))}, {cell(kt_r.get('total_cpu_s'))} "
              f"({cell(kt_r.get('total_best'), '{:.4g}')}) | {cell(op_r.get('total_s'), '{:.2f}')}, "
              f"{cell(op_r.get('total_cpu_s'), '{:.2f}')} ({cell(op_r.get('total_best'), '{:.4g}')}) | "
              f"{ratio(op_r.get('total_s'), kt_r.get('total_s'))}, "
              f"{ratio(op_r.get('total_cpu_s'), kt_r.get('total_cpu_s'))} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=list(FUNCTIONS))
    ap.add_argument("--variants", nargs="+", default=["univariate", "multivariate"],
                    choices=["univariate", "multivariate"])
    ap.add_argument("--methods", nargs="+", default=["kubetune", "optuna"], choices=["kubetune", "optuna"],
                    help="what to run now; Optuna results are read from --peer-cache when present there")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000],
                    help="numbers of finished trials at which asks are timed (5000 costs Optuna minutes)")
    ap.add_argument("--reps", type=int, default=30, help="timed asks per size")
    ap.add_argument("--total", type=int, default=1000, help="trials whose whole-run wall time is reported")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peer-cache", default=None, help="JSON file of Optuna results, read and extended")
    ap.add_argument("--recompute-peers", action="store_true", help="rerun Optuna even when cached")
    ap.add_argument("--out", default=str(OUT / "tpe_own_runs.json"), help="JSON results (merged into)")
    ap.add_argument("--protocol", choices=["flow", "failed"], default="flow",
                    help="flow: time the asks of trials n+1..n+reps of the run (default); failed: reps extra asks "
                         "on the n-trial history, told failed (the protocol of the 2026-12-01 figures)")
    args = ap.parse_args(argv)

    cache = load_json(args.peer_cache)
    results = load_json(args.out)
    results.setdefault("runs", {})
    rows = {}
    for fname in args.functions:
        for variant in args.variants:
            mv = variant == "multivariate"
            key = cache_key(fname, variant, args.seed, args.reps, args.total, args.protocol)
            row = rows.setdefault((fname, variant), {})
            if "kubetune" in args.methods:
                row["kubetune"] = measure("kubetune", fname, mv, args.sizes, args.reps, args.total, args.seed,
                                           protocol=args.protocol)
                row["kubetune"]["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            cached = cache.get(key)
            if "optuna" in args.methods and (args.recompute_peers or not covers(cached, args.sizes)):
                cached = measure("optuna", fname, mv, args.sizes, args.reps, args.total, args.seed,
                                 protocol=args.protocol)
                cached["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                cache[key] = cached
                if args.peer_cache:
                    save_json(args.peer_cache, cache)
            if cached is not None:
                row["optuna"] = cached
            for method, r in row.items():
                asks = "  ".join(f"n={n}: {a['wall_median_ms']:.3f} / {a['wall_p90_ms']:.3f} ms"
                                 for n, a in r["ask"].items())
                print(f"{fname:9s} {variant:12s} {method:8s} {asks}  total {r.get('total_s', math.nan):.3f} s  "
                      f"load {r['load_start']:.2f}-{r['load_end']:.2f}", flush=True)
            results["runs"][key] = row
            save_json(args.out, results)
    print_tables(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
