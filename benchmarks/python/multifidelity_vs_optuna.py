"""Epochs needed to reach a target on synthetic learning curves: kubetune Random / Hyperband / ASHA / BOHB vs
Optuna's HyperbandPruner and SuccessiveHalvingPruner on the same objective and the same cost accounting.

Problem: ``kt.functions.LearningCurves(dim=4, max_budget=81, noise=0.01, crossing=0.3, seed=1000+s)``.
Cost = epochs trained. Random trains 81 epochs per trial; Hyperband/BOHB train each rung's budget from scratch
(Katib-style trials); ASHA and the Optuna pruners train epoch by epoch, reporting every epoch, and stop when
pruned. A run reaches the target when a configuration trained for all 81 epochs shows a value <= target.
Runs that never reach it count as the cap in the median.

    PYTHONPATH=python .venv/bin/python benchmarks/python/multifidelity_vs_optuna.py [--seeds 10] [--target 0.03] [--cap 60000]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "..", "..", "python"))  # PYTHONPATH, if set, wins

import kubetune  # noqa: E402,F401
from kubetune.demo import multifidelity as dm  # noqa: E402


def run_optuna(seed: int, target: float, cap: float, pruner_name: str, sampler_name: str) -> Optional[float]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    lc = dm.problem(seed)
    b = dm._Budget(target, cap)
    if pruner_name == "hyperband":
        pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=dm.R, reduction_factor=dm.ETA)
    else:
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=dm.ETA)
    sampler = (optuna.samplers.RandomSampler(seed=seed) if sampler_name == "random"
               else optuna.samplers.TPESampler(seed=seed))
    study = optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)

    def objective(trial):
        x = [trial.suggest_float(f"x{j}", 0.0, 1.0) for j in range(dm.DIM)]
        v = None
        for epoch in range(1, dm.R + 1):
            v = lc.value(x, epoch)
            b.spend(1)
            trial.report(v, epoch)
            if epoch < dm.R and trial.should_prune():
                raise optuna.TrialPruned()
        b.full(v)
        return v

    def stop(study, _trial):
        if b.done:
            study.stop()

    study.optimize(objective, n_trials=100000, callbacks=[stop])
    return b.hit


TPE_SECONDS = 60.0  # per-run wall-clock limit for the kubetune TPE row (TPE's ask cost grows with the trials)


def run_tpe_asha(seed: int, target: float, cap: float) -> Optional[float]:
    """kubetune TPE sampling with the ASHA pruner (same epoch-by-epoch protocol as the Optuna rows).

    Stops after TPE_SECONDS of wall time (counted as not reached): when the target is missed, ASHA prunes most
    trials at epoch 1 and tens of thousands of trials accumulate.
    """
    import kubetune as kt

    t_end = time.perf_counter() + TPE_SECONDS

    lc = dm.problem(seed)
    b = dm._Budget(target, cap)
    pruner_cls = getattr(kt, "ASHAPruner", None) or kt._native.ASHAPruner
    st = kt.Study(lc.space(), searcher=kt.TPE(), pruner=pruner_cls(min_resource=1, max_resource=dm.R, eta=dm.ETA),
                  seed=seed)
    while not b.done and time.perf_counter() < t_end:
        t = st.ask()
        x = dm._point(t)
        v = None
        for epoch in range(1, dm.R + 1):
            v = lc.value(x, epoch)
            b.spend(1)
            st.report(t.id, epoch, v)
            if epoch < dm.R and st.should_prune(t.id):
                break
        else:
            st.tell(t.id, v)
            b.full(v)
            continue
        st.tell(t.id, state="pruned")
    return b.hit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--target", type=float, default=0.03)
    ap.add_argument("--cap", type=float, default=60000.0)
    ap.add_argument("--tpe-seconds", type=float, default=TPE_SECONDS, help="wall limit per kubetune TPE run")
    args = ap.parse_args()
    globals()["TPE_SECONDS"] = args.tpe_seconds
    methods = {f"kubetune {k}": v for k, v in dm.METHODS.items()}
    if hasattr(kubetune, "TPE"):
        methods["kubetune TPE+ASHAPruner"] = run_tpe_asha
    try:
        import optuna

        for pr in ("hyperband", "sh"):
            for sa in ("random", "tpe"):
                label = f"optuna {sa.upper() if sa == 'tpe' else 'Random'}+{'HyperbandPruner' if pr == 'hyperband' else 'SHPruner'}"
                methods[label] = (lambda p, s: (lambda seed, t, c: run_optuna(seed, t, c, p, s)))(pr, sa)
        peer = f"optuna {optuna.__version__}"
    except ImportError:
        peer = "optuna not installed (pip install optuna)"
    seeds = list(range(args.seeds))
    print(f"target {args.target}, cap {args.cap:.0f} epochs, seeds {seeds}, {peer}")
    print(f"| method | median epochs to target | reached | mean wall s / run |")
    print(f"|---|---:|---:|---:|")
    for name, fn in methods.items():
        t0 = time.perf_counter()
        res = [fn(s, args.target, args.cap) for s in seeds]
        wall = (time.perf_counter() - t0) / len(seeds)
        vals = [r if r is not None else args.cap for r in res]
        print(f"| {name} | {statistics.median(vals):.0f} | {sum(r is not None for r in res)}/{len(res)} | {wall:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
