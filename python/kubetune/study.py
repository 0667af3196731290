"""Pure-Python conveniences on top of the native Study: ``optimize`` (threads, progress bar, Optuna-style
callbacks) and ``trials_dataframe`` (an Optuna-like pandas table)."""
from __future__ import annotations

import datetime as _datetime
import threading as _threading
import time as _time
import typing as _typing
from concurrent.futures import ThreadPoolExecutor as _ThreadPoolExecutor
from concurrent.futures import wait as _wait

from ._deprecation import renamed_keywords as _renamed_keywords

if _typing.TYPE_CHECKING:
    from typing import Any, Callable, Iterable

    import pandas as pd

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["Callback", "RunningTrial", "TrialPruned"]

#: ``callback(study, trial)``, called after each finished trial (the signature of Optuna's callbacks).
Callback = _typing.Callable[[_typing.Any, _typing.Any], None]


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


class _RunState:
    """What the workers of one ``optimize`` call share (guarded by its lock)."""

    __slots__ = ("left", "stop", "error", "active", "running")

    def __init__(self, n_trials: int) -> None:
        self.left = n_trials
        self.stop = False
        self.error: BaseException | None = None
        self.active = 0
        # Ids of asked trials nobody has told yet. Whoever removes an id (the worker when its objective returns,
        # or the interrupt handler) is the one that tells it, so each trial is told exactly once.
        self.running: set[int] = set()


#: How often the main thread wakes while worker threads run: a blocked wait would see a Ctrl-C only after
#: every worker had ended (``_thread.interrupt_main`` does not wake a blocked lock at all).
_POLL_SECONDS = 0.05


def _objective_result(value: Any) -> float | list[float]:
    if isinstance(value, (list, tuple)):
        return [float(v) for v in value]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"objective must return a number, got {type(value).__name__}") from None


@_renamed_keywords("Study.optimize", n_jobs="n_threads", show_progress="progress")
def _optimize(
    self: Any,
    func: Callable[[RunningTrial], float],
    n_trials: int,
    n_threads: int = 1,
    progress: bool = False,
    timeout: float | None = None,
    catch: Iterable[type[BaseException]] = (),
    callbacks: Iterable[Callback] | None = None,
) -> Any:
    """Run ``func(trial)`` for ``n_trials`` trials with ``n_threads`` worker threads; returns the study.

    ``func`` returns the objective value (or a list for several directions), raises ``kt.TrialPruned`` to
    stop early (recorded as pruned) or any other exception (recorded as failed; re-raised unless its type is
    in ``catch``). The native calls release the GIL, so threads overlap whenever ``func`` does too. Stops
    early when the search space is exhausted or ``timeout`` seconds have passed.

    Ctrl-C (a ``KeyboardInterrupt``, in the objective or in the main thread while workers run) stops at once:
    no new trial starts, every trial still running is told failed (``fail_reason`` says why), and the
    ``KeyboardInterrupt`` is re-raised without waiting for worker threads; an objective still running in one
    finishes in the background and its result is dropped.

    Each of ``callbacks`` is called as ``callback(study, trial)`` after every trial that finishes (complete,
    pruned, or failed with an exception in ``catch``), with the finished ``kt.Trial``, in the worker thread
    that ran it, one callback call at a time. An exception in a callback stops ``optimize`` and is re-raised,
    as in Optuna.

    ``n_threads=-1`` uses one thread per CPU; ``progress=True`` shows a tqdm bar with the best value. The names
    ``n_jobs`` (for ``n_threads``) and ``show_progress`` (for ``progress``) are deprecated aliases that still
    work for one release with a ``DeprecationWarning``; giving both spellings of one setting is a TypeError.
    """
    from ._kubetune import SearchExhausted

    if not isinstance(n_trials, int) or isinstance(n_trials, bool) or n_trials < 0:
        raise ValueError(f"n_trials must be a non-negative int, got {n_trials!r}")
    if not isinstance(n_threads, int) or isinstance(n_threads, bool) or n_threads == 0 or n_threads < -1:
        raise ValueError(f"n_threads must be a positive int or -1, got {n_threads!r}")
    if n_threads == -1:
        import os

        n_threads = os.cpu_count() or 1
    catch = tuple(catch)
    cbs = _check_callbacks(callbacks)
    cb_lock = _threading.Lock()
    lock = _threading.Lock()
    state = _RunState(n_trials)
    deadline = None if timeout is None else _time.monotonic() + float(timeout)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_trials, desc="kubetune", unit="trial")

    def take() -> bool:
        with lock:
            if state.stop or state.left <= 0:
                return False
            if deadline is not None and _time.monotonic() > deadline:
                return False
            state.left -= 1
            return True

    def ask_or_wait() -> Any:
        # A searcher may have nothing to run *now* (e.g. Hyperband waiting for a rung to fill) while other
        # workers' trials are still running: wait for them instead of stopping. Stop only when nothing runs.
        while True:
            try:
                trial = self.ask()
            except SearchExhausted:
                with lock:
                    if state.active == 0 or state.stop:
                        state.stop = True
                        return None
                _time.sleep(0.005)
                continue
            with lock:
                stopped = state.stop
                if not stopped:
                    state.active += 1
                    state.running.add(trial.id)
            if stopped:  # asked while optimize was being stopped: never run it
                self.tell(trial.id, state="failed")
                self.set_user_attr(trial.id, "fail_reason", "optimize stopped before the trial ran")
                return None
            return trial

    def worker() -> None:
        while take():
            trial = ask_or_wait()
            if trial is None:
                return
            try:
                run_one(trial)
            finally:
                with lock:
                    state.active -= 1

    def fail(exc: BaseException) -> None:
        with lock:
            state.stop = True
            if state.error is None:
                state.error = exc

    def finish(trial_id: int, *args: Any, reason: str | None = None, **kwargs: Any) -> bool:
        # Tells the trial unless the interrupt handler already has; False then.
        with lock:
            if trial_id not in state.running:
                return False
            state.running.discard(trial_id)
        self.tell(trial_id, *args, **kwargs)
        if reason is not None:
            self.set_user_attr(trial_id, "fail_reason", reason)
        return True

    def abandon_running(exc: BaseException) -> None:
        fail(exc)
        with lock:
            ids = sorted(state.running)
        for trial_id in ids:
            finish(trial_id, state="failed", reason=f"{type(exc).__name__}: optimize stopped while the trial ran")

    def run_callbacks(trial_id: int) -> None:
        if not cbs:
            return
        finished = self.trial(trial_id)
        try:
            with cb_lock:
                for cb in cbs:
                    cb(self, finished)
        except Exception as exc:  # noqa: BLE001  (stops optimize; re-raised once the workers are done)
            fail(exc)

    def run_one(trial: Any) -> None:
        try:
            value = func(RunningTrial(self, trial))
        except TrialPruned:
            told = finish(trial.id, state="pruned")
        except BaseException as exc:  # noqa: BLE001  (recorded; KeyboardInterrupt and the like always stop)
            told = finish(trial.id, state="failed", reason=f"{type(exc).__name__}: {exc}")
            if not (isinstance(exc, Exception) and isinstance(exc, catch)):
                fail(exc)
                return
        else:
            try:
                result = _objective_result(value)
            except TypeError as exc:
                finish(trial.id, state="failed", reason=str(exc))
                raise
            told = finish(trial.id, result)
        if told:
            run_callbacks(trial.id)
            advance_bar()

    def advance_bar() -> None:
        if bar is not None:
            with lock:
                bar.update(1)
                best = self.best_value
                if best is not None:
                    bar.set_postfix(best=f"{best:.6g}")

    def run_threads() -> None:
        pool = _ThreadPoolExecutor(max_workers=n_threads)
        futures = [pool.submit(worker) for _ in range(n_threads)]
        try:
            while _wait(futures, timeout=_POLL_SECONDS).not_done:
                pass
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        for f in futures:
            f.result()

    try:
        if n_threads == 1:
            worker()
        else:
            run_threads()
    except BaseException as exc:
        abandon_running(exc)
        raise
    finally:
        if bar is not None:
            bar.close()
    if state.error is not None:
        raise state.error
    return self


def _check_callbacks(callbacks: Iterable[Callback] | None) -> tuple[Callback, ...]:
    if callbacks is None:
        return ()
    what = f"callbacks must be an iterable of callables callback(study, trial), got {type(callbacks).__name__}"
    if callable(callbacks):
        raise TypeError(what + " (wrap a single callback in a list)")
    if isinstance(callbacks, (str, bytes)):
        raise TypeError(what)
    try:
        cbs = tuple(callbacks)
    except TypeError:
        raise TypeError(what) from None
    for i, cb in enumerate(cbs):
        if not callable(cb):
            raise TypeError(f"callbacks[{i}] must be callable as callback(study, trial), got {type(cb).__name__}")
    return cbs


# ---- trials_dataframe ------------------------------------------------------------------------------------
# Column names and order follow Optuna's Study.trials_dataframe() defaults (optuna/study/_dataframe.py):
# number, value (values_0, values_1, ... for several objectives), datetime_start, datetime_complete,
# duration, params_<name>, user_attrs_<key>, system_attrs_<key> (each group sorted by name), state.


def _import_pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            "Study.trials_dataframe() needs pandas, which is not installed: pip install pandas"
        ) from exc
    return pandas


def _timestamp(seconds: float) -> _datetime.datetime | None:
    # Naive local time, as Optuna's datetime_start / datetime_complete.
    return _datetime.datetime.fromtimestamp(seconds) if seconds > 0 else None


def _trial_row(trial: Any, n_objectives: int, pending: Any, finished: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"number": trial.number}
    values = list(trial.values) if trial.values else [None] * n_objectives
    if n_objectives == 1:
        row["value"] = values[0]
    else:
        row.update({f"values_{i}": v for i, v in enumerate(values)})
    start = None if trial.state == pending else _timestamp(trial.created_at)
    end = _timestamp(trial.finished_at) if trial.state in finished else None
    row["datetime_start"] = start
    row["datetime_complete"] = end
    row["duration"] = end - start if start is not None and end is not None else None
    row.update({f"params_{k}": v for k, v in trial.params.items()})
    row.update({f"user_attrs_{k}": v for k, v in trial.user_attrs.items()})
    row.update({f"system_attrs_{k}": v for k, v in trial.system_attrs.items()})
    row["state"] = trial.state.name
    return row


def _dataframe_columns(n_objectives: int, rows: list[dict[str, Any]]) -> list[str]:
    values = ["value"] if n_objectives == 1 else [f"values_{i}" for i in range(n_objectives)]
    head = ["number", *values, "datetime_start", "datetime_complete", "duration"]
    keys = {k for row in rows for k in row}
    groups = [sorted(k for k in keys if k.startswith(p)) for p in ("params_", "user_attrs_", "system_attrs_")]
    return head + [k for g in groups for k in g] + ["state"]


def _trials_dataframe(self: Any) -> pd.DataFrame:
    """The study's trials as a pandas DataFrame, one row per trial in id order, with Optuna's default columns.

    ``number``; ``value`` (or ``values_0``, ``values_1``, ... with several directions; NaN unless complete);
    ``datetime_start`` / ``datetime_complete`` (naive local time; NaT while pending / unfinished) and
    ``duration``; ``params_<name>`` (NaN where a conditional parameter is inactive), ``user_attrs_<key>``,
    ``system_attrs_<key>``; ``state`` (the ``kt.TrialState`` name: COMPLETE, PRUNED, FAILED, RUNNING,
    PENDING). A study without trials gives those fixed columns and no rows. Needs pandas.
    """
    from ._kubetune import TrialState

    pandas = _import_pandas()
    n_objectives = len(self.directions)
    finished = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAILED)
    rows = [_trial_row(t, n_objectives, TrialState.PENDING, finished) for t in self.trials]
    columns = _dataframe_columns(n_objectives, rows)
    df = pandas.DataFrame(rows, columns=columns)
    for col in ("datetime_start", "datetime_complete"):
        df[col] = pandas.to_datetime(df[col])
    df["duration"] = pandas.to_timedelta(df["duration"])
    return df


def _install_study_helpers(study_cls: type) -> None:
    setattr(study_cls, "optimize", _optimize)
    setattr(study_cls, "trials_dataframe", _trials_dataframe)
