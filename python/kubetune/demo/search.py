"""Demo section: every available searcher on built-in benchmark functions, as one compact table."""
from __future__ import annotations

import statistics as _statistics
import time as _time

import kubetune as _kt

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["run"]


def _searchers() -> list:
    out: list = []
    for name, make in [
        ("Random", lambda: getattr(_kt, "RandomSearch", None) and _kt.RandomSearch()),
        ("Sobol", lambda: getattr(_kt, "Sobol", None) and _kt.Sobol()),
        ("TPE", lambda: getattr(_kt, "TPE", None) and _kt.TPE()),
        ("TPE-mv", lambda: getattr(_kt, "TPE", None) and _kt.TPE(multivariate=True)),
        ("GP", lambda: getattr(_kt, "GP", None) and _kt.GP()),
    ]:
        s = make()
        if s:
            out.append((name, s))
    if not out:
        out.append(("Random", "random"))
    return out


def run(quick: bool = False) -> None:
    """Median simple regret of each searcher on four benchmark functions (a few seeds)."""
    problems = [("branin", 2), ("hartmann6", 6), ("ackley", 5), ("levy", 4)]
    budget = 30 if quick else 60
    seeds = [0] if quick else [0, 1, 2]
    searchers = _searchers()
    print(f"median simple regret (best - known optimum) after {budget} trials, {len(seeds)} seed(s); lower is better")
    header = f"{'function':<14}" + "".join(f"{name:>12}" for name, _ in searchers)
    print(header)
    print("-" * len(header))
    times = {name: 0.0 for name, _ in searchers}
    for fname, dim in problems:
        fn = _kt.functions.get(fname, dim)
        row = f"{fname + '-' + str(dim) + 'd':<14}"
        for name, searcher in searchers:
            regrets = []
            for seed in seeds:
                study = _kt.Study(fn.space(), searcher=searcher, seed=seed)
                t0 = _time.perf_counter()
                study.optimize(lambda t: fn(t.params), n_trials=budget)
                times[name] += _time.perf_counter() - t0
                regrets.append(study.best_value - fn.optimum)
            row += f"{_statistics.median(regrets):>12.4g}"
        print(row)
    print(f"{'seconds':<14}" + "".join(f"{times[name]:>12.2f}" for name, _ in searchers))
