"""kubetune GP vs Optuna GPSampler vs scikit-optimize gp_minimize: best values and time per suggestion.

Quality: Branin, Hartmann6, Ackley-5d, Levy-4d; median (over seeds) best value after 50 and 100 trials.
Speed: CPU (and wall) time per suggestion from n = 50, 200, 1000 complete trials (random history of Hartmann6):
mean over --timing-reps consecutive asks at n, n + 1, ... (every ask counts, hyperparameter refits included),
after one untimed ask at n - 1; scikit-optimize: tell(n points) + ask per repetition.
Peers are optional: a missing one is reported as "not installed". Example (full run):
    PYTHONPATH=python .venv/bin/python benchmarks/python/gp_vs_peers.py --seeds 10 --out gp_results.json
Quick: --seeds 2 --budgets 50 --functions branin --timing-n 50 200
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings

import numpy as np

import kubetune as kt

FUNCTIONS = {"branin": ("branin", 2), "hartmann6": ("hartmann6", 6), "ackley5": ("ackley", 5), "levy4": ("levy", 4)}


def get_fn(key):
    name, dim = FUNCTIONS[key]
    f = kt.functions.get(name)
    if f.dim != dim:
        f = f.with_dim(dim)
    return f


# ---------------------------------------------------------------- optimisation runs (best-so-far curve)
GP_SETTINGS = {}  # extra kt.GP keyword arguments (--gp-settings)


def run_kubetune(f, n, seed, threads):
    study = kt.Study(f.space(), searcher=kt.GP(n_threads=threads, **GP_SETTINGS), seed=seed)
    curve, best, times = [], math.inf, []
    for _ in range(n):
        t0 = time.perf_counter()
        t = study.ask()
        times.append(time.perf_counter() - t0)
        v = f(t.params)
        study.tell(t, v)
        best = min(best, v)
        curve.append(best)
    return curve, times


def run_optuna(f, n, seed, threads):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    bounds = f.bounds
    sampler = optuna.samplers.GPSampler(seed=seed)
    study = optuna.create_study(sampler=sampler)
    curve, best, times = [], math.inf, []
    for _ in range(n):
        t0 = time.perf_counter()
        trial = study.ask()
        x = [trial.suggest_float(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)]
        times.append(time.perf_counter() - t0)
        v = f(np.array(x))
        study.tell(trial, v)
        best = min(best, v)
        curve.append(best)
    return curve, times


def run_skopt(f, n, seed, threads):
    from skopt import Optimizer

    # gp_minimize's defaults (scikit-optimize 0.10): GP base estimator, gp_hedge, 10 initial points, lbfgs.
    opt = Optimizer(list(map(tuple, f.bounds)), base_estimator="GP", acq_func="gp_hedge", acq_optimizer="auto",
                    n_initial_points=10, random_state=seed, n_jobs=threads)
    curve, best, times = [], math.inf, []
    pending_tell = 0.0
    for _ in range(n):
        t0 = time.perf_counter()
        x = opt.ask()
        times.append(pending_tell + time.perf_counter() - t0)  # skopt fits + optimises inside tell()
        v = f(np.array(x, dtype=float))
        t1 = time.perf_counter()
        opt.tell(x, v)
        pending_tell = time.perf_counter() - t1
        best = min(best, v)
        curve.append(best)
    return curve, times


# ---------------------------------------------------------------- time of one suggestion at history size n
def history(f, n, seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = np.array(f.bounds).T
    X = lo + (hi - lo) * rng.random((n, len(lo)))
    return X, np.array([f(x) for x in X])


def summary(pairs):
    """Mean and median wall and CPU seconds of (wall, cpu) pairs, plus every ask's CPU seconds.

    The mean counts every ask (hyperparameter refits included); CPU time is fairer on a shared machine."""
    return {"wall": statistics.fmean(p[0] for p in pairs), "cpu": statistics.fmean(p[1] for p in pairs),
            "wall_median": statistics.median(p[0] for p in pairs),
            "cpu_median": statistics.median(p[1] for p in pairs), "asks": len(pairs),
            "cpu_each": [round(p[1], 6) for p in pairs]}


def time_kubetune(f, n, reps, threads):
    """History of n - 1 random points, one untimed ask (the cold fit) and tell, then `reps` consecutive
    timed asks at n, n + 1, ... (each told before the next)."""
    X, y = history(f, n - 1)
    study = kt.Study(f.space(), searcher=kt.GP(n_threads=threads, **GP_SETTINGS), seed=0)
    for x, v in zip(X, y):
        study.add_trial({f"x{i}": float(c) for i, c in enumerate(x)}, float(v))
    out = []
    for r in range(reps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        t = study.ask()
        if r > 0:
            out.append((time.perf_counter() - t0, time.process_time() - c0))
        study.tell(t, f(t.params))
    return summary(out)


def time_optuna(f, n, reps, threads):
    """Same protocol as time_kubetune."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = history(f, n - 1)
    dists = {f"x{i}": optuna.distributions.FloatDistribution(lo, hi) for i, (lo, hi) in enumerate(f.bounds)}
    study = optuna.create_study(sampler=optuna.samplers.GPSampler(seed=0))
    study.add_trials([optuna.trial.create_trial(params={f"x{i}": float(c) for i, c in enumerate(x)},
                                                distributions=dists, value=float(v)) for x, v in zip(X, y)])
    out = []
    for r in range(reps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        trial = study.ask()
        x = [trial.suggest_float(k, d.low, d.high) for k, d in dists.items()]
        if r > 0:
            out.append((time.perf_counter() - t0, time.process_time() - c0))
        study.tell(trial, f(np.array(x)))
    return summary(out)


def time_skopt(f, n, reps, threads):
    from skopt import Optimizer

    X, y = history(f, n)
    out = []
    for r in range(max(reps, 1)):
        opt = Optimizer(list(map(tuple, f.bounds)), base_estimator="GP", acq_func="gp_hedge", acq_optimizer="auto",
                        n_initial_points=10, random_state=r, n_jobs=threads)
        t0, c0 = time.perf_counter(), time.process_time()
        opt.tell([list(map(float, x)) for x in X], [float(v) for v in y])  # fit + acquisition optimisation
        opt.ask()
        out.append((time.perf_counter() - t0, time.process_time() - c0))
    return summary(out)


RUNNERS = {"kubetune": (run_kubetune, time_kubetune), "optuna": (run_optuna, time_optuna),
           "skopt": (run_skopt, time_skopt)}


def available(peer):
    try:
        if peer == "optuna":
            import optuna  # noqa: F401
            import torch  # noqa: F401  (GPSampler needs torch + scipy)
            import scipy  # noqa: F401
        elif peer == "skopt":
            import skopt  # noqa: F401
        return True
    except Exception as e:  # pragma: no cover
        print(f"# {peer} not installed: {e}", file=sys.stderr)
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--budgets", type=int, nargs="+", default=[50, 100])
    ap.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=list(FUNCTIONS))
    ap.add_argument("--peers", nargs="+", default=list(RUNNERS), choices=list(RUNNERS))
    ap.add_argument("--timing-n", type=int, nargs="*", default=[50, 200, 1000])
    ap.add_argument("--timing-reps", type=int, default=3)
    ap.add_argument("--timing-function", default="hartmann6", choices=list(FUNCTIONS))
    ap.add_argument("--threads", type=int, default=1, help="threads for kubetune (and skopt n_jobs)")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--gp-settings", default="{}", help="extra kt.GP keyword arguments as JSON")
    ap.add_argument("--out", default=None, help="write raw results (JSON) here")
    ap.add_argument("--log", default=None, help="append one JSON line per finished run here")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    GP_SETTINGS.update(json.loads(args.gp_settings))
    try:
        import torch

        torch.set_num_threads(max(args.threads, 1))
    except Exception:
        pass
    peers = [p for p in args.peers if available(p)]
    results = {"args": vars(args), "quality": {}, "timing": {}, "peers_missing": sorted(set(args.peers) - set(peers))}
    n_max = max(args.budgets)
    if not args.skip_quality:
        print(f"median best value over {args.seeds} seeds (lower is better)")
        print(f"{'function':10s} {'budget':>6s} " + " ".join(f"{p:>12s}" for p in peers))
        for key in args.functions:
            f = get_fn(key)
            curves = {p: [] for p in peers}
            for p in peers:
                for s in range(args.first_seed, args.first_seed + args.seeds):
                    c, t = RUNNERS[p][0](f, n_max, s, args.threads)
                    curves[p].append(c)
                    if args.log:  # one line per run, so a long run that is cut short still leaves data
                        with open(args.log, "a") as fh:
                            fh.write(json.dumps({"function": key, "peer": p, "seed": s,
                                                 "best": {str(b): c[b - 1] for b in args.budgets},
                                                 "mean_suggest_s": statistics.fmean(t)}) + "\n")
            for b in args.budgets:
                row = {p: statistics.median(c[b - 1] for c in curves[p]) for p in peers}
                results["quality"][f"{key}@{b}"] = {"median": row, "runs": {p: [c[b - 1] for c in curves[p]] for p in peers}}
                print(f"{key:10s} {b:6d} " + " ".join(f"{row[p]:12.5f}" for p in peers), flush=True)
    if args.timing_n:
        f = get_fn(args.timing_function)
        print(f"\nseconds per suggestion on {args.timing_function} from n complete trials: mean over {args.timing_reps} "
              "consecutive asks (after one untimed ask), wall / process CPU")
        print(f"{'n':>6s} " + " ".join(f"{p:>20s}" for p in peers))
        for n in args.timing_n:
            row = {}
            for p in peers:
                row[p] = RUNNERS[p][1](f, n, args.timing_reps, args.threads)
                if args.log:
                    with open(args.log, "a") as fh:
                        fh.write(json.dumps({"timing_n": n, "peer": p, **row[p]}) + "\n")
            results["timing"][str(n)] = row
            print(f"{n:6d} " + " ".join(f"{row[p]['wall']:9.4f} / {row[p]['cpu']:8.4f}" for p in peers), flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
