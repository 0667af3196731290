"""Selection protocol for TPE setting variants: kubetune only, best-after-100/300 medians over a seed range."""
import argparse
import json
import sys

import numpy as np

import kubetune as kt
from tpe_vs_peers import FUNCTIONS

VARIANTS = {  # name -> TPE kwargs (all keep the Optuna defaults for startup, candidates, gamma, prior weight)
    "default": {},
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed0", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--mv", action="store_true")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
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
