"""Selection protocol for TPE setting variants: kubetune only, best-after-100/300 medians over a seed range.

--compare: same-seed comparison of a kubetune run of this script (--kt, variant "default") with Optuna runs of
tpe_vs_peers.py (--optuna FILE:SEED0 ..., method --method): per function/budget medians, two-sided
Mann-Whitney p, x/10 counts per 20-seed block and pooled, Stouffer's Z over the 10 pairs.
"""
import argparse
import json
import sys

import numpy as np

import kubetune as kt
from tpe_vs_peers import FUNCTIONS

VARIANTS = {  # name -> TPE kwargs (all keep the Optuna defaults for startup, candidates, gamma, prior weight)
    "default": {},
    "optuna": {"n_refine_candidates": 0},  # Optuna's algorithm (kt.TPE.optuna())
    "refine6": {"n_refine_candidates": 6},
    "refine8": {"n_refine_candidates": 8},
    "refine12": {"n_refine_candidates": 12},
    "refine24": {"n_refine_candidates": 24},
    "scale10": {"refine_scale": 0.1},
    "scale12": {"refine_scale": 0.125},
    "scale20": {"refine_scale": 0.2},
    "scale30": {"refine_scale": 0.3},
    "scale50": {"refine_scale": 0.5},
    "scale100": {"refine_scale": 1.0},
    "ei48": {"n_ei_candidates": 48},
    "ei96": {"n_ei_candidates": 96},
    "endpoints": {"consider_endpoints": True},
    "noclip": {"consider_magic_clip": False},
    "flatw": {"n_flat_weights": 0},
    "scott": {"bandwidth": "scott"},
}


def run(f, bounds, n, seed, kw):
    space = kt.SearchSpace()
    for i, (lo, hi) in enumerate(bounds):
        space.add_float(f"x{i}", lo, hi)
    study = kt.Study(space, searcher=kt.TPE(**kw), seed=seed)
    best, out = np.inf, []
    for _ in range(n):
        t = study.ask()
        y = f([t.params[f"x{i}"] for i in range(len(bounds))])
        study.tell(t, y)
        best = min(best, y)
        out.append(best)
    return out


def compare(kt_path, optuna_specs, method, seeds, block=20):
    from scipy.stats import mannwhitneyu, norm

    funs = list(FUNCTIONS)
    op = {}
    for spec in optuna_specs:
        path, seed0 = spec.rsplit(":", 1)
        q = json.load(open(path))["quality"]
        for f in funs:
            for b in ("100", "300"):
                for i, v in enumerate(q.get(f, {}).get(method, {}).get(b, [])):
                    op[(f, b, int(seed0) + i)] = v
    kd = json.load(open(kt_path))
    kt = {(f, b, i): v for f in funs for b in ("100", "300") for i, v in enumerate(kd[f"default|{f}|{b}"])}

    def count(ss):
        return sum(np.median([kt[(f, b, s)] for s in ss]) <= np.median([op[(f, b, s)] for s in ss])
                   for f in funs for b in ("100", "300"))

    seeds = [s for s in seeds if all((f, b, s) in op and (f, b, s) in kt for f in funs for b in ("100", "300"))]
    print(f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}); kubetune vs {method}")
    print("| function | budget | kubetune median | peer median | Mann-Whitney p |")
    print("|---|---|---|---|---|")
    zs = []
    for f in funs:
        for b in ("100", "300"):
            a = [kt[(f, b, s)] for s in seeds]
            c = [op[(f, b, s)] for s in seeds]
            p = mannwhitneyu(a, c, alternative="two-sided").pvalue
            zs.append(norm.isf(mannwhitneyu(a, c, alternative="less").pvalue))
            print(f"| {f} | {b} | {np.median(a):.4g} | {np.median(c):.4g} | {p:.2f} |")
    blocks = [seeds[i:i + block] for i in range(0, len(seeds) - block + 1, block)]
    print("x/10 (kubetune median <= peer median) per block:", [int(count(bl)) for bl in blocks], "pooled:", int(count(seeds)))
    print(f"Stouffer Z (> 0: kubetune better): {sum(zs) / np.sqrt(len(zs)):.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed0", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--mv", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--compare", action="store_true", help="compare --kt with --optuna (no runs)")
    ap.add_argument("--kt", help="--compare: JSON written by this script (variant default)")
    ap.add_argument("--optuna", nargs="+", default=[], help="--compare: tpe_vs_peers.py JSON files as FILE:SEED0")
    ap.add_argument("--method", default="optuna-mv", help="--compare: peer method name in those files")
    a = ap.parse_args()
    if a.compare:
        compare(a.kt, a.optuna, a.method, list(range(a.seed0, a.seed0 + a.seeds)))
        return 0
    if not a.out:
        ap.error("--out is required")
    res = {}
    for v in a.variants:
        kw = dict(VARIANTS[v], multivariate=a.mv)
        for fname, (f, bounds, _) in FUNCTIONS.items():
            runs = [run(f, bounds, 300, s, kw) for s in range(a.seed0, a.seed0 + a.seeds)]
            for b in (100, 300):
                res[f"{v}|{fname}|{b}"] = [r[b - 1] for r in runs]
            print(v, fname, [float(np.median([r[b - 1] for r in runs])) for b in (100, 300)], flush=True)
            json.dump(res, open(a.out, "w"))


if __name__ == "__main__":
    sys.exit(main())
