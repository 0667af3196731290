"""Pure-Python conveniences on top of the native Study: ``optimize`` with threads and a progress bar."""
from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable


class TrialPruned(Exception):
    """Raise inside an objective to stop the trial early; ``optimize`` records it as pruned."""


class RunningTrial:
    """Handle passed to the objective by ``Study.optimize``: parameters plus report/should_prune."""

    __slots__ = ("_study", "_trial")

    def __init__(self, study: Any, trial: Any) -> None:
        self._study = study
        self._trial = trial

    @property
    def id(self) -> int:
        return self._trial.id

    number = id

    @property
    def params(self) -> dict:
        return self._trial.params

    def __getitem__(self, name: str) -> Any:
        return self._trial.params[name]

    def report(self, step: int, value: float) -> None:
        self._study.report(self._trial.id, step, value)

    def should_prune(self) -> bool:
        return self._study.should_prune(self._trial.id)

    def set_user_attr(self, key: str, value: Any) -> None:
        self._study.set_user_attr(self._trial.id, key, str(value))

    def __repr__(self) -> str:
        return f"RunningTrial(id={self.id}, params={self.params!r})"


def _optimize(
    self: Any,
    func: Callable[[RunningTrial], float],
    n_trials: int,
    n_jobs: int = 1,
    show_progress: bool = False,
    timeout: float | None = None,
    catch: Iterable[type[BaseException]] = (),
) -> Any:
    """Run ``func(trial)`` for ``n_trials`` trials with ``n_jobs`` worker threads; returns the study.

    ``func`` returns the objective value (or a list for several directions), raises ``kt.TrialPruned`` to
    stop early (recorded as pruned) or any other exception (recorded as failed; re-raised unless its type is
    in ``catch``). The native calls release the GIL, so threads overlap whenever ``func`` does too. Stops
    early when the search space is exhausted or ``timeout`` seconds have passed.
    """
    from ._kubetune import SearchExhausted

    if not isinstance(n_trials, int) or isinstance(n_trials, bool) or n_trials < 0:
        raise ValueError(f"n_trials must be a non-negative int, got {n_trials!r}")
    if not isinstance(n_jobs, int) or isinstance(n_jobs, bool) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be a positive int or -1, got {n_jobs!r}")
    if n_jobs == -1:
        import os

        n_jobs = os.cpu_count() or 1
    catch = tuple(catch)
    lock = threading.Lock()
    state = {"left": n_trials, "stop": False, "error": None, "active": 0}
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    bar = None
    if show_progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_trials, desc="kubetune", unit="trial")

    def take() -> bool:
        with lock:
            if state["stop"] or state["left"] <= 0:
                return False
            if deadline is not None and time.monotonic() > deadline:
                return False
            state["left"] -= 1
            return True

    def ask_or_wait():
        # A searcher may have nothing to run *now* (e.g. Hyperband waiting for a rung to fill) while other
        # workers' trials are still running: wait for them instead of stopping. Stop only when nothing runs.
        while True:
            try:
                trial = self.ask()
                with lock:
                    state["active"] += 1
                return trial
            except SearchExhausted:
                with lock:
                    if state["active"] == 0 or state["stop"]:
                        state["stop"] = True
                        return None
                time.sleep(0.005)

    def worker() -> None:
        while take():
            trial = ask_or_wait()
            if trial is None:
                return
            try:
                run_one(trial)
            finally:
                with lock:
                    state["active"] -= 1

    def run_one(trial) -> None:
        handle = RunningTrial(self, trial)
        try:
            value = func(handle)
        except TrialPruned:
            self.tell(trial.id, state="pruned")
        except Exception as exc:  # noqa: BLE001  (recorded, then re-raised unless caught)
            self.tell(trial.id, state="failed")
            self.set_user_attr(trial.id, "fail_reason", f"{type(exc).__name__}: {exc}")
            if not isinstance(exc, catch):
                with lock:
                    state["stop"] = True
                    if state["error"] is None:
                        state["error"] = exc
                return
        else:
            if isinstance(value, (list, tuple)):
                self.tell(trial.id, [float(v) for v in value])
            else:
                try:
                    v = float(value)
                except (TypeError, ValueError):
                    self.tell(trial.id, state="failed")
                    raise TypeError(f"objective must return a number, got {type(value).__name__}") from None
                self.tell(trial.id, v if not math.isnan(v) else float("nan"))
        if bar is not None:
            with lock:
                bar.update(1)
                best = self.best_value
                if best is not None:
                    bar.set_postfix(best=f"{best:.6g}")

    try:
        if n_jobs == 1:
            worker()
        else:
            with ThreadPoolExecutor(max_workers=n_jobs) as pool:
                for f in [pool.submit(worker) for _ in range(n_jobs)]:
                    f.result()
    finally:
        if bar is not None:
            bar.close()
    if state["error"] is not None:
        raise state["error"]
    return self


def _install_study_helpers(study_cls: type) -> None:
    study_cls.optimize = _optimize
