"""KubetuneSampler inside Optuna vs Optuna's own TPESampler: sampler time per trial and final quality.

Speed: one study per sampler on InMemoryStorage, 10 float parameters (Styblinski-Tang, d = 10), the history is
the run's own. The time measured is the process CPU time (and the wall time) spent inside ``sample_relative``
+ ``sample_independent`` per trial (a wrapper sampler times the calls), reported as the mean over trials
n-100 .. n-1 (histories of 900..999 trials for n = 1000) and over the whole run; the median of ``--repeats``
whole runs per sampler, one sampler after the other (alternating which goes first). Also one lockstep run (the
two studies advance one trial each in turn: the same load for both, but each sampler starts with caches the
other one has just filled), and a breakdown of kubetune's part on the final history.

Quality: 6 built-in functions (kt.functions) x 16 seeds, ``--budget`` trials per run (default 200), simple
regret of the best value (best - known optimum), KubetuneSampler(kt.TPE(multivariate=True), seed=s) vs
TPESampler(multivariate=True, seed=s). Per function: median and mean regret, how often each is better on the
same seed, and a two-sided Wilcoxon signed-rank p-value (scipy, when installed).

    PYTHONPATH=python nice -n 5 timeout 2400 .venv/bin/python benchmarks/python/optuna_sampler.py \
        --out benchmarks/out/optuna_sampler.json
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import time
import warnings
from typing import Any, Callable, Optional, Sequence

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study
from optuna.trial import FrozenTrial, Trial, TrialState

import kubetune as kt
from kubetune.integrations.optuna import KubetuneSampler

QUALITY_FUNCTIONS: list[tuple[str, Optional[int]]] = [
    ("branin", None),
    ("hartmann6", None),
    ("rosenbrock", 4),
    ("ackley", 5),
    ("levy", 6),
    ("styblinski_tang", 10),
]


class TimedSampler(BaseSampler):
    """Delegates to a sampler and adds the time of its sample_relative / sample_independent calls per trial:
    process CPU time (``seconds``, the fair figure on a loaded machine) and wall time (``wall``)."""

    def __init__(self, inner: BaseSampler) -> None:
        self.inner = inner
        self.seconds: dict[int, float] = {}
        self.wall: dict[int, float] = {}

    def _timed(self, number: int, call: Callable[[], Any]) -> Any:
        c0, w0 = time.process_time(), time.perf_counter()
        out = call()
        self.seconds[number] = self.seconds.get(number, 0.0) + time.process_time() - c0
        self.wall[number] = self.wall.get(number, 0.0) + time.perf_counter() - w0
        return out

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._timed(trial.number, lambda: self.inner.sample_relative(study, trial, search_space))

    def sample_independent(self, study: Study, trial: FrozenTrial, name: str, dist: BaseDistribution) -> Any:
        return self._timed(trial.number, lambda: self.inner.sample_independent(study, trial, name, dist))

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self.inner.before_trial(study, trial)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values: Optional[Sequence[float]]) -> None:
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()


def objective_for(f: kt.functions.Function) -> Callable[[Trial], float]:
    bounds = f.bounds

    def objective(trial: Trial) -> float:
        x = [trial.suggest_float(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)]
        return float(f(x))

    return objective


def samplers(seed: int) -> dict[str, BaseSampler]:
    return {
        "kubetune": KubetuneSampler(kt.TPE(multivariate=True), seed=seed),
        "optuna": optuna.samplers.TPESampler(multivariate=True, seed=seed),
    }


def _summary(t: TimedSampler, n_trials: int) -> dict[str, float]:
    last = range(max(0, n_trials - 100), n_trials)
    return {
        "sampler_ms_last100": 1e3 * statistics.fmean(t.seconds.get(i, 0.0) for i in last),
        "sampler_ms_mean": 1e3 * statistics.fmean(t.seconds.get(i, 0.0) for i in range(n_trials)),
        "wall_ms_last100": 1e3 * statistics.fmean(t.wall.get(i, 0.0) for i in last),
    }


def _speed_study(name: str, n_trials: int, seed: int) -> tuple[dict[str, float], optuna.Study]:
    f = kt.functions.get("styblinski_tang", 10)
    timed = TimedSampler(samplers(seed)[name])
    study = optuna.create_study(sampler=timed)
    t0 = time.perf_counter()
    study.optimize(objective_for(f), n_trials=n_trials)
    return {**_summary(timed, n_trials), "wall_s": time.perf_counter() - t0, "best_value": study.best_value}, study


def _cpu_ms(call: Callable[[int], Any], reps: int) -> float:
    """Median process CPU time of call(k), k = 0..reps-1."""
    out = []
    for k in range(reps):
        c0 = time.process_time()
        call(k)
        out.append(time.process_time() - c0)
    return 1e3 * statistics.median(out)


def breakdown(study: optuna.Study, reps: int = 30) -> dict[str, float]:
    """What kubetune's part costs on the run's final history (the last `reps` trials asked again, each with
    the trials before it): the TPE ask alone with warm caches, with a fresh searcher, and the ways to refill
    the history (columns with the finished trials kept, all columns, a list of dicts through Study.replay)."""
    trials = study.trials
    names = [f"x{i}" for i in range(10)]
    space = kt.SearchSpace()
    for n in names:
        space.add_float(n, -5.0, 5.0)
    x = np.array([[t.params[n] for n in names] for t in trials])
    v = np.array([[t.value] for t in trials])
    st = np.full(len(trials), kt.TrialState.COMPLETE.value)
    first = len(trials) - reps

    def cols(lo: int, hi: int) -> dict[str, Any]:
        return {"x": x[lo:hi], "state": st[lo:hi], "values": v[lo:hi]}

    records = [{"params": dict(zip(names, row)), "state": "complete", "values": [float(val[0])]} for row, val in zip(x, v)]
    warm = kt.Study(space, kt.TPE(multivariate=True), seed=1)
    warm.replace_trials(cols(0, first - 1), ask_counter=0)
    kept = [first - 1]

    def keep_and_ask(k: int) -> None:
        n = first + k
        warm.replace_trials(cols(kept[0], n), ask_counter=n, keep=kept[0])
        kept[0] = n
        warm.ask()

    fresh = _cpu_ms(lambda k: kt.Study.replay(space, kt.TPE(multivariate=True), cols(0, first + k), seed=1,
                                               ask_counter=first + k).ask(), reps)
    replay_cols = _cpu_ms(lambda k: kt.Study.replay(space, kt.TPE(multivariate=True), cols(0, first + k), seed=1,
                                                     ask_counter=first + k), reps)
    replay_dicts = _cpu_ms(lambda k: kt.Study.replay(space, kt.TPE(multivariate=True), records[: first + k],
                                                      seed=1, ask_counter=first + k), reps)
    keep_ask = _cpu_ms(keep_and_ask, reps)
    full = kt.Study(space, kt.TPE(multivariate=True), seed=1)
    replace_all = _cpu_ms(lambda k: full.replace_trials(cols(0, first + k), ask_counter=first + k), reps)
    return {
        "n": float(first), "warm_keep_replace_and_ask_ms": keep_ask, "fresh_replay_and_ask_ms": fresh,
        "replay_columns_ms": replay_cols, "replay_dicts_ms": replay_dicts, "replace_all_columns_ms": replace_all,
    }


def _lockstep(n_trials: int, seed: int) -> dict[str, Any]:
    """Both studies advance one trial each in turn: the same machine load, but each sampler runs right after
    the other one has filled the CPU caches with its own data."""
    f = kt.functions.get("styblinski_tang", 10)
    obj = objective_for(f)
    timed = {k: TimedSampler(s) for k, s in samplers(seed).items()}
    studies = {k: optuna.create_study(sampler=s) for k, s in timed.items()}
    for _ in range(n_trials):
        for st in studies.values():
            st.optimize(obj, n_trials=1)
    out: dict[str, Any] = {k: _summary(t, n_trials) for k, t in timed.items()}
    out["ratio_last100"] = out["optuna"]["sampler_ms_last100"] / out["kubetune"]["sampler_ms_last100"]
    return out


def speed(n_trials: int, seed: int, repeats: int) -> dict[str, Any]:
    """Whole runs, one sampler after the other (alternating which goes first), `repeats` times each; medians."""
    runs: dict[str, list[dict[str, float]]] = {"kubetune": [], "optuna": []}
    last: Optional[optuna.Study] = None
    for r in range(repeats):
        order = ["kubetune", "optuna"] if r % 2 == 0 else ["optuna", "kubetune"]
        for name in order:
            summary, study = _speed_study(name, n_trials, seed)
            runs[name].append(summary)
            if name == "kubetune":
                last = study
    out: dict[str, Any] = {"function": "styblinski_tang", "dim": 10, "n_trials": n_trials, "seed": seed,
                           "repeats": repeats, "runs": runs}
    for name, rs in runs.items():
        out[name] = {k: statistics.median(r[k] for r in rs)
                     for k in ("sampler_ms_last100", "sampler_ms_mean", "wall_ms_last100")}
    out["ratio_last100"] = out["optuna"]["sampler_ms_last100"] / out["kubetune"]["sampler_ms_last100"]
    out["ratio_mean"] = out["optuna"]["sampler_ms_mean"] / out["kubetune"]["sampler_ms_mean"]
    out["ratio_wall_last100"] = out["optuna"]["wall_ms_last100"] / out["kubetune"]["wall_ms_last100"]
    out["lockstep"] = _lockstep(n_trials, seed)
    assert last is not None
    out["kubetune_breakdown"] = breakdown(last)
    return out


def quality(budget: int, seeds: int) -> dict[str, Any]:
    try:
        from scipy.stats import wilcoxon
    except ImportError:  # pragma: no cover - scipy is a benchmark-only peer
        wilcoxon = None
    res: dict[str, Any] = {"budget": budget, "seeds": seeds, "functions": {}}
    for name, dim in QUALITY_FUNCTIONS:
        f = kt.functions.get(name, dim)
        regrets: dict[str, list[float]] = {"kubetune": [], "optuna": []}
        secs = {"kubetune": 0.0, "optuna": 0.0}
        for seed in range(seeds):
            for k, s in samplers(seed).items():
                st = optuna.create_study(sampler=s)
                t0 = time.perf_counter()
                st.optimize(objective_for(f), n_trials=budget)
                secs[k] += time.perf_counter() - t0
                regrets[k].append(st.best_value - f.optimum)
        a, b = regrets["kubetune"], regrets["optuna"]
        row: dict[str, Any] = {
            "dim": f.dim,
            "median_regret": {k: statistics.median(v) for k, v in regrets.items()},
            "mean_regret": {k: statistics.fmean(v) for k, v in regrets.items()},
            "kubetune_better": sum(x < y for x, y in zip(a, b)),
            "optuna_better": sum(y < x for x, y in zip(a, b)),
            "wall_s": secs,
        }
        if wilcoxon is not None and any(x != y for x, y in zip(a, b)):
            row["wilcoxon_p"] = float(wilcoxon(a, b).pvalue)
        res["functions"][f"{name}-{f.dim}"] = row
        print(f"{name}-{f.dim}: median regret kubetune {row['median_regret']['kubetune']:.4g} "
              f"optuna {row['median_regret']['optuna']:.4g}; better on {row['kubetune_better']} vs "
              f"{row['optuna_better']} seeds; p = {row.get('wilcoxon_p', float('nan')):.3g}", flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed-trials", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3, help="whole speed runs per sampler")
    ap.add_argument("--budget", type=int, default=200, help="trials per quality run")
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--out", type=pathlib.Path, default=None, help="write the figures as JSON")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    report: dict[str, Any] = {"optuna": optuna.__version__, "kubetune": kt.__version__}
    sp = speed(args.speed_trials, seed=0, repeats=args.repeats)
    report["speed"] = sp
    ls = sp["lockstep"]
    kb, ob = sp["kubetune"], sp["optuna"]
    print(f"sampler CPU time per trial, trials {max(0, args.speed_trials - 100)}..{args.speed_trials - 1} "
          f"(median of {args.repeats} runs each): kubetune {kb['sampler_ms_last100']:.3f} ms, "
          f"optuna {ob['sampler_ms_last100']:.3f} ms, ratio {sp['ratio_last100']:.1f}x (wall "
          f"{kb['wall_ms_last100']:.3f} vs {ob['wall_ms_last100']:.3f} ms, {sp['ratio_wall_last100']:.1f}x); "
          f"whole run {kb['sampler_ms_mean']:.3f} vs {ob['sampler_ms_mean']:.3f} ms, {sp['ratio_mean']:.1f}x; "
          f"lockstep {ls['kubetune']['sampler_ms_last100']:.3f} vs {ls['optuna']['sampler_ms_last100']:.3f} ms, "
          f"{ls['ratio_last100']:.1f}x", flush=True)
    print("kubetune part on the final history (CPU ms):", {k: round(v, 3) for k, v in sp["kubetune_breakdown"].items()},
          flush=True)
    if not args.skip_quality:
        report["quality"] = quality(args.budget, args.seeds)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
