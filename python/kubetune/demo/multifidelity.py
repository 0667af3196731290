"""Demo section: resource needed by Random, Hyperband, ASHA and BOHB to reach a target on synthetic learning curves.

Each method optimises ``kt.functions.LearningCurves`` (dim 4, max budget 81 epochs). Cost is the number of
epochs trained: a Random trial trains 81 epochs; a Hyperband/BOHB trial trains its rung's budget from scratch;
an ASHA trial trains epoch by epoch until it is pruned or reaches 81. A method reaches the target when a
configuration trained for the full 81 epochs shows a value <= target. ``benchmarks/python/multifidelity_vs_optuna.py``
adds Optuna's HyperbandPruner and SuccessiveHalvingPruner on the same objective and accounting.
"""
from __future__ import annotations

import statistics as _statistics
import time as _time
import typing as _typing

import kubetune as _kt

if _typing.TYPE_CHECKING:
    from typing import Callable, Optional

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["DIM", "ETA", "METHODS", "R", "problem", "run", "run_asha", "run_bracketed", "run_random", "summarize"]

#: Maximum budget (epochs), reduction factor and dimension of the learning-curve problem.
R = 81
ETA = 3
DIM = 4


def problem(seed: int, noise: float = 0.01) -> _typing.Any:
    """The learning-curve problem used by the demo and the benchmark (seeded)."""
    return _kt.functions.LearningCurves(dim=DIM, max_budget=R, noise=noise, crossing=0.3, seed=1000 + seed)


class _Budget:
    """Counts epochs and records when the target is first met at full budget."""

    def __init__(self, target: float, cap: float) -> None:
        self.target, self.cap = target, cap
        self.used = 0.0
        self.hit: Optional[float] = None

    def spend(self, epochs: float) -> None:
        self.used += epochs

    def full(self, value: float) -> None:
        if self.hit is None and value <= self.target:
            self.hit = self.used

    @property
    def done(self) -> bool:
        return self.hit is not None or self.used >= self.cap


def _point(t, dim: int = DIM) -> list:
    p = t.params
    return [p[f"x{j}"] for j in range(dim)]


def run_random(seed: int, target: float, cap: float) -> Optional[float]:
    lc = problem(seed)
    b = _Budget(target, cap)
    st = _kt.Study(lc.space(), searcher=_kt.RandomSearch(), seed=seed)
    while not b.done:
        t = st.ask()
        v = lc.value(_point(t), R)
        b.spend(R)
        st.tell(t.id, v)
        b.full(v)
    return b.hit


def run_bracketed(seed: int, target: float, cap: float, bohb: bool) -> Optional[float]:
    """Hyperband (random sampling) or BOHB, repeating brackets until the target or the cap."""
    lc = problem(seed)
    b = _Budget(target, cap)
    cls = _kt.BOHB if bohb else _kt.Hyperband
    st = _kt.Study(lc.space(), searcher=cls("epochs", max_resource=R, eta=ETA, n_iterations=0), seed=seed)
    while not b.done:
        ts = st.ask(1)
        if not ts:
            break
        t = ts[0]
        r = t.params["epochs"]
        v = lc.value(_point(t), r)
        b.spend(r)
        st.tell(t.id, v)
        if r == R:
            b.full(v)
    return b.hit


def run_asha(seed: int, target: float, cap: float) -> Optional[float]:
    """ASHA in prune mode: every trial trains epoch by epoch, reporting; should_prune stops it at rungs."""
    lc = problem(seed)
    b = _Budget(target, cap)
    st = _kt.Study(lc.space(), searcher=_kt.ASHA(min_resource=1, max_resource=R, eta=ETA), seed=seed)
    while not b.done:
        t = st.ask()
        x = _point(t)
        pruned = False
        for epoch in range(1, R + 1):
            v = lc.value(x, epoch)
            b.spend(1)
            st.report(t.id, epoch, v)
            if epoch < R and st.should_prune(t.id):
                pruned = True
                break
        if pruned:
            st.tell(t.id, state="pruned")
        else:
            st.tell(t.id, v)
            b.full(v)
    return b.hit


#: Method name -> run(seed, target, cap): epochs spent when the target was first met, or None.
METHODS: dict = {
    "Random": run_random,
    "Hyperband": lambda s, t, c: run_bracketed(s, t, c, False),
    "ASHA": run_asha,
    "BOHB": lambda s, t, c: run_bracketed(s, t, c, True),
}


def summarize(results: list, cap: float) -> str:
    """Median epochs over seeds (runs that never reach the target count as the cap) and hit count."""
    vals = [r if r is not None else cap for r in results]
    hits = sum(r is not None for r in results)
    return f"{_statistics.median(vals):>10.0f} {hits:>2}/{len(results)}"


def run(quick: bool = False) -> None:
    target = 0.05
    cap = 20000.0 if quick else 40000.0
    seeds = list(range(3 if quick else 5))
    methods: dict[str, Callable] = dict(METHODS)
    print(f"epochs to reach final value <= {target} on learning curves (dim {DIM}, R = {R}, eta = {ETA}); "
          f"median of {len(seeds)} seeds, cap {cap:.0f}; lower is better")
    print(f"{'method':<10}{'epochs':>10} {'hit':>5} {'time s':>8}")
    for name, fn in methods.items():
        t0 = _time.perf_counter()
        res = [fn(s, target, cap) for s in seeds]
        print(f"{name:<10}{summarize(res, cap)} {_time.perf_counter() - t0:>8.2f}")
