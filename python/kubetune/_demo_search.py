"""Demo section: every available searcher on built-in benchmark functions, as one compact table."""
from __future__ import annotations

import statistics
import time


def _searchers(kt):
    out = []
    for name, make in [
        ("Random", lambda: getattr(kt, "RandomSearch", None) and kt.RandomSearch()),
        ("Sobol", lambda: getattr(kt, "Sobol", None) and kt.Sobol()),
        ("TPE", lambda: getattr(kt, "TPE", None) and kt.TPE()),
        ("TPE-mv", lambda: getattr(kt, "TPE", None) and kt.TPE(multivariate=True)),
        ("GP", lambda: getattr(kt, "GP", None) and kt.GP()),
    ]:
        s = make()
        if s:
            out.append((name, s))
    if not out:
        out.append(("Random", "random"))
    return out


def run(quick: bool = False) -> None:
    import kubetune as kt

    problems = [("branin", 2), ("hartmann6", 6), ("ackley", 5), ("levy", 4)]
    budget = 30 if quick else 60
    seeds = [0] if quick else [0, 1, 2]
    searchers = _searchers(kt)
    print(f"median simple regret (best - known optimum) after {budget} trials, {len(seeds)} seed(s); lower is better")
    header = f"{'function':<14}" + "".join(f"{name:>12}" for name, _ in searchers)
    print(header)
    print("-" * len(header))
    times = {name: 0.0 for name, _ in searchers}
    for fname, dim in problems:
        fn = kt.functions.get(fname, dim)
        row = f"{fname + '-' + str(dim) + 'd':<14}"
        for name, searcher in searchers:
            regrets = []
            for seed in seeds:
                study = kt.Study(fn.space(), searcher=searcher, seed=seed)
                t0 = time.perf_counter()
                study.optimize(lambda t: fn(t.params), n_trials=budget)
                times[name] += time.perf_counter() - t0
                regrets.append(study.best_value - fn.optimum)
            row += f"{statistics.median(regrets):>12.4g}"
        print(row)
    print(f"{'seconds':<14}" + "".join(f"{times[name]:>12.2f}" for name, _ in searchers))


def run_multifidelity(quick: bool = False) -> None:
    try:
        from . import _demo_multifidelity
    except ImportError:  # pragma: no cover
        print("(multi-fidelity module not built)")
        return
    _demo_multifidelity.run(quick=quick)
