"""kubetune inside Optuna: any kubetune searcher as an Optuna sampler, any kubetune pruner as an Optuna pruner.

Swap the sampler and keep the rest of an Optuna program (storages, ``study.optimize``, ``n_jobs``, several
processes on one RDB or journal storage)::

    import optuna
    import kubetune as kt
    from kubetune.integrations.optuna import KubetuneSampler, KubetunePruner

    study = optuna.create_study(sampler=KubetuneSampler(kt.TPE(multivariate=True), seed=1),
                                pruner=KubetunePruner(kt.MedianStop()))
    study.optimize(objective, n_trials=200)

How the study is handed to kubetune (the decisions stay in C++; this module converts types):

* Relative sampling covers the study's intersection search space (``IntersectionSearchSpace`` with pruned
  trials, as Optuna's TPE), without single-valued and unsupported distributions; every other parameter (dynamic
  ranges, conditional parameters) is sampled alone by the same searcher over the trials that used that exact
  distribution.
* ``FloatDistribution`` (log, step) and ``IntDistribution`` (log, step) map onto kubetune's float and int
  parameters; ``CategoricalDistribution`` maps onto a kubetune categorical whose choices are the indices
  ``"0", "1", ...`` of Optuna's choices, so any choice type (None, bool, int, float, str) comes back as the
  very object Optuna holds.
* COMPLETE trials pass their values, PRUNED ones their learning curve, RUNNING and WAITING ones (WAITING with
  their fixed parameters) pass as pending points that the searchers avoid (constant liar); FAIL is ignored.
  Maximisation is handled by kubetune (``direction``); several objectives work with the searchers that do not
  read values (``kt.Sobol``, ``kt.RandomSearch``), the others raise ``ValueError``.
* Each call rebuilds the kubetune study with :meth:`kubetune.Study.replay` semantics: the answer is a function of
  (sampler seed, trial number, history) only, so a fresh sampler on the same history answers alike and two
  workers on one storage (different trial numbers) never draw the same stream. Searcher attributes (GP
  hyperparameters, Sobol indices) are stored in the trial's system attributes (``kubetune:relative``,
  ``kubetune:independent:<param>``) and handed back on later calls.
* Speed: finished trials are immutable in Optuna, so their conversion is cached per study and search space
  (keyed by trial number), and a kubetune study per space is kept and refilled in bulk
  (:meth:`kubetune.Study.replace_trials` with columns); its searcher's caches are memoisation only, so the
  cache state never changes an answer.

A finite space that the searcher reports exhausted (every point tried) gets a uniform random point instead
(Optuna samplers must always answer); that is the only decision taken here.
"""
from __future__ import annotations

import bisect as _bisect
import logging as _logging
import math as _math
import os as _os
import threading as _threading
import typing as _typing
import weakref as _weakref
import zlib as _zlib
from collections import OrderedDict as _OrderedDict
from dataclasses import dataclass as _dataclass
from dataclasses import field as _field

import numpy as _np
import optuna as _optuna
from optuna.distributions import BaseDistribution as _BaseDistribution
from optuna.distributions import CategoricalDistribution as _CategoricalDistribution
from optuna.distributions import FloatDistribution as _FloatDistribution
from optuna.distributions import IntDistribution as _IntDistribution
from optuna.pruners import BasePruner as _BasePruner
from optuna.samplers import BaseSampler as _BaseSampler
from optuna.search_space import IntersectionSearchSpace as _IntersectionSearchSpace
from optuna.study import StudyDirection as _StudyDirection
from optuna.trial import FrozenTrial as _FrozenTrial
from optuna.trial import TrialState as _TrialState

import kubetune as _kt

if _typing.TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Optional, Sequence

    import numpy.typing as npt

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["INDEPENDENT_ATTRS_PREFIX", "KubetunePruner", "KubetuneSampler", "RELATIVE_ATTRS_KEY"]

_log = _logging.getLogger(__name__)

#: System attribute holding the searcher attributes of a trial's relative sample.
RELATIVE_ATTRS_KEY = "kubetune:relative"
#: Prefix of the system attribute holding those of one independently sampled parameter.
INDEPENDENT_ATTRS_PREFIX = "kubetune:independent:"

# Searcher types that never read objective values: they accept any number of objectives.
_VALUE_BLIND = frozenset({"random", "sobol", "grid"})
_MASK64 = (1 << 64) - 1
_MAX_HISTORIES = 64  # cached (space, stream) conversions per study, least recently used dropped

_COMPLETE: int = _kt.TrialState.COMPLETE.value
_KT_STATE: dict[_TrialState, int] = {
    _TrialState.COMPLETE: _COMPLETE,
    _TrialState.PRUNED: _kt.TrialState.PRUNED.value,
    _TrialState.RUNNING: _kt.TrialState.RUNNING.value,
    _TrialState.WAITING: _kt.TrialState.RUNNING.value,  # not started yet: a pending point all the same
    _TrialState.FAIL: _kt.TrialState.FAILED.value,
}

_Space = _typing.Mapping[str, _BaseDistribution]


# ---------------------------------------------------------------------------------------------- seeds


def _mix(seed: int, salt: int) -> int:
    """SplitMix64 finaliser of seed + salt * golden ratio (Steele et al., "Fast splittable PRNGs", 2014)."""
    z = (seed + (salt + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _fresh_seed() -> int:
    return int.from_bytes(_os.urandom(8), "little")


def _independent_salt(name: str) -> int:
    return 1 + _zlib.crc32(name.encode("utf-8"))


# ---------------------------------------------------------------------------------------------- distributions


def _unsupported(name: str, dist: _BaseDistribution) -> TypeError:
    return TypeError(
        f"KubetuneSampler: parameter {name!r} has an unsupported distribution {dist!r} "
        "(supported: FloatDistribution, IntDistribution, CategoricalDistribution)"
    )


def _add_param(space: _kt.SearchSpace, name: str, dist: _BaseDistribution) -> None:
    """Add one Optuna distribution to a kubetune space; TypeError / ValueError name the parameter."""
    if isinstance(dist, _FloatDistribution):
        try:
            space.add_float(name, float(dist.low), float(dist.high), log=dist.log, step=dist.step)
        except ValueError as e:
            raise ValueError(f"KubetuneSampler: parameter {name!r} ({dist!r}) is not supported: {e}") from None
    elif isinstance(dist, _IntDistribution):
        try:
            space.add_int(name, int(dist.low), int(dist.high), log=dist.log, step=int(dist.step))
        except (ValueError, OverflowError, TypeError) as e:
            raise ValueError(f"KubetuneSampler: parameter {name!r} ({dist!r}) is not supported: {e}") from None
    elif isinstance(dist, _CategoricalDistribution):
        space.add_categorical(name, [str(i) for i in range(len(dist.choices))])
    else:
        raise _unsupported(name, dist)


def _check_supported(name: str, dist: _BaseDistribution) -> None:
    _add_param(_kt.SearchSpace(), name, dist)


def _is_supported(name: str, dist: _BaseDistribution) -> bool:
    try:
        _check_supported(name, dist)
    except (TypeError, ValueError):
        return False
    return True


def _single_value(dist: _BaseDistribution) -> Any:
    if isinstance(dist, _CategoricalDistribution):
        return dist.choices[0]
    if isinstance(dist, (_FloatDistribution, _IntDistribution)):
        return dist.low
    raise _unsupported("?", dist)


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and _math.isnan(v)


def _choice_index(dist: _CategoricalDistribution, value: Any) -> int:
    """Index of value among the choices, telling True from 1 and 1.0 from 1 (same type first)."""
    for i, c in enumerate(dist.choices):
        if type(c) is type(value) and (c == value or (_is_nan(c) and _is_nan(value))):
            return i
    return int(dist.to_internal_repr(value))


def _contains(dist: _BaseDistribution, value: Any) -> bool:
    try:
        return bool(dist._contains(dist.to_internal_repr(value)))
    except (ValueError, TypeError):
        return False


_FLOAT, _INT, _CATEGORICAL = 0, 1, 2


@_dataclass(frozen=True)
class _Param:
    """One parameter's conversion (what isinstance would decide, decided once)."""

    name: str
    dist: _BaseDistribution
    kind: int
    low: float = 0.0
    high: float = 0.0
    step: Optional[float] = None

    @staticmethod
    def of(name: str, dist: _BaseDistribution) -> "_Param":
        if isinstance(dist, _CategoricalDistribution):
            return _Param(name, dist, _CATEGORICAL)
        if isinstance(dist, _IntDistribution):
            return _Param(name, dist, _INT, float(dist.low), float(dist.high))
        assert isinstance(dist, _FloatDistribution)
        return _Param(name, dist, _FLOAT, float(dist.low), float(dist.high), dist.step)

    def internal(self, value: Any) -> float:
        """Optuna value -> kubetune internal encoding (value, or categorical index), snapped on the grid."""
        if self.kind == _CATEGORICAL:
            assert isinstance(self.dist, _CategoricalDistribution)
            return float(_choice_index(self.dist, value))
        v = float(value)
        if self.step is not None:
            v = min(max(self.low + round((v - self.low) / self.step) * self.step, self.low), self.high)
        return v

    def external(self, x: float) -> Any:
        """kubetune internal encoding -> the Optuna value (python float / int, or the choice object itself)."""
        if self.kind == _CATEGORICAL:
            assert isinstance(self.dist, _CategoricalDistribution)
            return self.dist.choices[int(round(x))]
        if self.kind == _INT:
            return int(round(x))
        v = float(x)
        if self.step is not None:
            v = self.low + round((v - self.low) / self.step) * self.step
        return min(max(v, self.low), self.high)


class _Codec:
    """One search space: the kubetune space and the per-trial encoding of Optuna parameters."""

    def __init__(self, space: _Space) -> None:
        self.names = list(space)
        self.params = [_Param.of(n, space[n]) for n in self.names]
        self.kt_space = _kt.SearchSpace()
        for p in self.params:
            _add_param(self.kt_space, p.name, p.dist)

    def encode(self, t: _FrozenTrial) -> Optional[list[float]]:
        """The trial's point, or None when it lacks a parameter or used another distribution for it."""
        dists = t.distributions
        params = t.params
        x: list[float] = []
        for p in self.params:
            d = dists.get(p.name)
            if d is None or not (d is p.dist or d == p.dist):
                return None
            x.append(p.internal(params[p.name]))
        return x

    def encode_fixed(self, fixed: Mapping[str, Any]) -> Optional[list[float]]:
        """A WAITING trial's point from its fixed parameters (enqueue_trial), None if incomplete or illegal."""
        x: list[float] = []
        for p in self.params:
            if p.name not in fixed or not _contains(p.dist, fixed[p.name]):
                return None
            x.append(p.internal(fixed[p.name]))
        return x

    def decode(self, x: Sequence[float]) -> dict[str, Any]:
        return {p.name: p.external(v) for p, v in zip(self.params, x)}


def _space_key(space: _Space) -> tuple[Any, ...]:
    """A hashable key equal for equal spaces (cheaper than hashing the distributions)."""
    key: tuple[Any, ...] = tuple((n, type(d), tuple(vars(d).items())) for n, d in space.items())
    try:
        hash(key)
    except TypeError:  # unhashable categorical choices (Optuna warns about them)
        key = tuple((n, type(d), repr(d)) for n, d in space.items())
    return key


# ---------------------------------------------------------------------------------------------- history


@_dataclass
class _Row:
    x: list[float]
    state: int
    values: Optional[Sequence[float]] = None
    curve: Optional[list[tuple[int, float]]] = None
    attrs: Optional[dict[str, float]] = None


_RowFn = _typing.Callable[[_FrozenTrial], _typing.Optional[_Row]]


class _Grow:
    """A growing array (first axis) with amortised O(1) appends."""

    def __init__(self, shape: tuple[int, ...], dtype: type) -> None:
        self.a: npt.NDArray[Any] = _np.zeros((16, *shape), dtype=dtype)
        self.n = 0

    def append(self, v: Any) -> None:
        if self.n == len(self.a):
            self.a = _np.concatenate([self.a, _np.zeros_like(self.a)])
        self.a[self.n] = v
        self.n += 1

    def view(self) -> npt.NDArray[Any]:
        return self.a[: self.n]


class _Columns:
    """Trials in the column layout of kubetune.Study.replace_trials."""

    def __init__(self, dim: int, n_values: int) -> None:
        self.dim, self.n_values = dim, n_values
        self.x = _Grow((dim,), _np.float64)
        self.state = _Grow((), _np.int64)
        self.values = _Grow((n_values,), _np.float64)
        self.i_row = _Grow((), _np.int64)
        self.i_step = _Grow((), _np.int64)
        self.i_value = _Grow((), _np.float64)
        self.attr_rows: list[int] = []  # ascending
        self.attr_values: list[dict[str, float]] = []

    @property
    def n(self) -> int:
        return self.x.n

    def append(self, r: _Row) -> None:
        row = self.n
        self.x.append(r.x)
        self.state.append(r.state)
        self.values.append(r.values if r.values is not None else _np.zeros(self.n_values))
        for step, v in r.curve or ():
            self.i_row.append(row)
            self.i_step.append(step)
            self.i_value.append(v)
        if r.attrs:
            self.attr_rows.append(row)
            self.attr_values.append(r.attrs)

    def columns(self, start: int, tail: Sequence[_Row]) -> dict[str, Any]:
        """Rows start.. of these columns followed by rows that are not cached (trials still running), with
        row numbers counted from start."""
        k = int(_np.searchsorted(self.i_row.view(), start))
        x, state, values = self.x.view()[start:], self.state.view()[start:], self.values.view()[start:]
        i_row, i_step, i_value = self.i_row.view()[k:] - start, self.i_step.view()[k:], self.i_value.view()[k:]
        a = _bisect.bisect_left(self.attr_rows, start)
        attrs = {r - start: v for r, v in zip(self.attr_rows[a:], self.attr_values[a:])}
        if tail:
            extra = _Columns(self.dim, self.n_values)
            for r in tail:
                extra.append(r)
            n = len(x)
            x = _np.concatenate([x, extra.x.view()])
            state = _np.concatenate([state, extra.state.view()])
            values = _np.concatenate([values, extra.values.view()])
            i_row = _np.concatenate([i_row, extra.i_row.view() + n])
            i_step = _np.concatenate([i_step, extra.i_step.view()])
            i_value = _np.concatenate([i_value, extra.i_value.view()])
            attrs.update({n + r: v for r, v in zip(extra.attr_rows, extra.attr_values)})
        return {"x": x, "state": state, "values": values, "intermediate": (i_row, i_step, i_value),
                "system_attrs": attrs}


class _History:
    """One study seen through one search space: cached rows of the leading finished trials (Optuna never
    changes a finished trial) and a kubetune study refilled from them on every call.

    Trials come ordered by number; the cache covers trials 0..frontier-1 while list position == number, and
    anything else (a filtered study) is converted on every call, so the cache can never change an answer."""

    def __init__(self, codec: _Codec, row_fn: _RowFn, study: _kt.Study, n_values: int) -> None:
        self.codec = codec
        self.row_fn = row_fn
        self.kt_study = study
        self.lock = _threading.Lock()
        self.cols = _Columns(len(codec.names), n_values)
        self.frontier = 0
        self.kept = 0  # leading trials of kt_study that are cols rows 0..kept-1 (replace_trials keeps them)
        self.tail: list[_Row] = []  # the uncached rows of the last replay

    def _advance(self, trials: Sequence[_FrozenTrial]) -> None:
        k = self.frontier
        if k > len(trials) or (k > 0 and trials[k - 1].number != k - 1):
            self.cols = _Columns(self.cols.dim, self.cols.n_values)  # not the list the cache was built on
            self.kept = k = 0
        self.frontier = k
        while k < len(trials) and trials[k].number == k and trials[k].state.is_finished():
            r = self.row_fn(trials[k])
            if r is not None:
                self.cols.append(r)
            k += 1
            self.frontier = k

    def replay(self, trials: Sequence[_FrozenTrial], ask_counter: int, skip: int = -1,
               replace: Optional[_FrozenTrial] = None) -> dict[int, int]:
        """Refill kt_study with every usable trial (trial number ``skip`` left out, ``replace`` used for its
        own number) and return the kubetune id of each uncached trial number. Call with the lock held."""
        self._advance(trials)
        tail: list[_Row] = []
        ids: dict[int, int] = {}
        for t in trials[self.frontier:]:
            if t.number == skip:
                continue
            if replace is not None and t.number == replace.number:
                t = replace
            r = self.row_fn(t)
            if r is not None:
                ids[t.number] = self.cols.n + len(tail)
                tail.append(r)
        keep = self.kept
        self.kt_study.replace_trials(self.cols.columns(keep, tail), ask_counter=ask_counter, keep=keep)
        self.kept = self.cols.n
        self.tail = tail
        return ids

    def all_columns(self) -> dict[str, Any]:
        """The columns of the last replay (all rows)."""
        return self.cols.columns(0, self.tail)


def _curve(t: _FrozenTrial) -> list[tuple[int, float]]:
    return sorted((int(s), float(v)) for s, v in t.intermediate_values.items())


def _attrs(t: _FrozenTrial, key: Optional[str]) -> Optional[dict[str, float]]:
    if key is None:
        return None
    a = t.system_attrs.get(key)
    if not isinstance(a, dict):
        return None
    return {str(k): float(v) for k, v in a.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _sampler_row_fn(codec: _Codec, attrs_key: str) -> _RowFn:
    def row(t: _FrozenTrial) -> Optional[_Row]:
        state = t.state
        if state == _TrialState.FAIL:
            return None
        x = codec.encode(t)
        if x is None and state == _TrialState.WAITING:
            fixed = t.system_attrs.get("fixed_params")
            x = codec.encode_fixed(fixed) if isinstance(fixed, dict) else None
        if x is None:
            return None
        values = t.values if state == _TrialState.COMPLETE else None
        curve = _curve(t) if state == _TrialState.PRUNED else None
        return _Row(x, _KT_STATE[state], values, curve, _attrs(t, attrs_key))

    return row


# ---------------------------------------------------------------------------------------------- per study


@_dataclass
class _StudyState:
    directions: list[str]
    space: _IntersectionSearchSpace = _field(default_factory=lambda: _IntersectionSearchSpace(include_pruned=True))
    histories: "_OrderedDict[Any, _History]" = _field(default_factory=_OrderedDict)
    supported: dict[Any, bool] = _field(default_factory=dict)  # by _space_key of one parameter
    lock: _threading.Lock = _field(default_factory=_threading.Lock)

    def relative_space(self, space: _Space) -> dict[str, _BaseDistribution]:
        """The distributions relative sampling takes (call with the lock held)."""
        out = {}
        for n, d in space.items():
            key = _space_key({n: d})
            ok = self.supported.get(key)
            if ok is None:
                ok = self.supported[key] = not d.single() and _is_supported(n, d)
            if ok:
                out[n] = d
        return out


def _directions(study: _optuna.Study) -> list[str]:
    return ["maximize" if d == _StudyDirection.MAXIMIZE else "minimize" for d in study.directions]


class _PerStudy:
    """Per-storage (weakly held) and per-study state; storages that refuse weak references get a fresh state
    on every call (correct, only slower)."""

    def __init__(self) -> None:
        self._lock = _threading.Lock()
        self._by_storage: "_weakref.WeakKeyDictionary[Any, dict[tuple[int, str], _StudyState]]" = (
            _weakref.WeakKeyDictionary()
        )

    def get(self, study: _optuna.Study) -> _StudyState:
        key = (study._study_id, study.study_name)
        with self._lock:
            try:
                per = self._by_storage.setdefault(study._storage, {})
            except TypeError:
                return _StudyState(_directions(study))
            st = per.get(key)
            if st is None:
                st = per[key] = _StudyState(_directions(study))
            return st

    def clear(self) -> None:
        with self._lock:
            self._by_storage = _weakref.WeakKeyDictionary()


def _history(st: _StudyState, key: Any, make: Callable[[], _History]) -> _History:
    with st.lock:
        h = st.histories.get(key)
        if h is None:
            h = st.histories[key] = make()
            while len(st.histories) > _MAX_HISTORIES:
                st.histories.popitem(last=False)
        else:
            st.histories.move_to_end(key)
        return h


# ---------------------------------------------------------------------------------------------- sampler


class KubetuneSampler(_BaseSampler):
    """An Optuna sampler backed by a kubetune searcher (kt.TPE, kt.GP, kt.Sobol, kt.RandomSearch, ...).

    Args:
        searcher: the kubetune searcher; its configuration is used (the object itself is not modified).
        seed: base seed; ``None`` draws one. Each sample draws from a stream given by (seed, trial number), so
            a run is reproducible for a given seed and history, and workers sharing a storage draw different
            streams.
    """

    def __init__(self, searcher: _kt.Searcher, *, seed: Optional[int] = None) -> None:
        if not isinstance(searcher, _kt.Searcher):
            raise TypeError(
                f"KubetuneSampler: searcher must be a kubetune searcher such as kt.TPE(), got {type(searcher).__name__}"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"KubetuneSampler: seed must be an int or None, got {seed!r}")
        self._config: dict[str, Any] = searcher.config()
        self._type = searcher.type
        self._seed = _fresh_seed() if seed is None else seed & _MASK64
        self._studies = _PerStudy()

    def __repr__(self) -> str:
        return f"KubetuneSampler({self._config!r}, seed={self._seed})"

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (Optuna samplers are): the searcher's configuration and the seed; caches start empty."""
        return {"config": self._config, "type": self._type, "seed": self._seed}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._config, self._type, self._seed = state["config"], state["type"], state["seed"]
        self._studies = _PerStudy()

    def reseed_rng(self) -> None:
        """Draw a new base seed (Optuna calls this in each thread of ``optimize(n_jobs > 1)``)."""
        self._seed = _fresh_seed()
        self._studies.clear()

    # -- Optuna API ----------------------------------------------------------------------------------------

    def infer_relative_search_space(self, study: _optuna.Study, trial: _FrozenTrial) -> dict[str, _BaseDistribution]:
        st = self._state(study)
        with st.lock:  # the trial list read once per trial, as Optuna's samplers do (Study's per-trial cache)
            return st.relative_space(st.space.calculate(study, use_cache=True))

    def sample_relative(
        self, study: _optuna.Study, trial: _FrozenTrial, search_space: dict[str, _BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        st = self._state(study)
        space = {n: search_space[n] for n in sorted(search_space)}
        h = self._history(st, space, RELATIVE_ATTRS_KEY, _mix(self._seed, 0))
        trials = study._get_trials(deepcopy=False, use_cache=True)
        x, attrs = self._ask(h, trials, trial.number)
        if attrs:
            study._storage.set_trial_system_attr(trial._trial_id, RELATIVE_ATTRS_KEY, attrs)
        return h.codec.decode(x)

    def sample_independent(
        self, study: _optuna.Study, trial: _FrozenTrial, param_name: str, param_distribution: _BaseDistribution
    ) -> Any:
        if not isinstance(param_distribution, (_FloatDistribution, _IntDistribution, _CategoricalDistribution)):
            raise _unsupported(param_name, param_distribution)
        if param_distribution.single():
            return _single_value(param_distribution)
        _check_supported(param_name, param_distribution)
        st = self._state(study)
        key = INDEPENDENT_ATTRS_PREFIX + param_name
        h = self._history(st, {param_name: param_distribution}, key, _mix(self._seed, _independent_salt(param_name)))
        trials = study._get_trials(deepcopy=False, use_cache=False)
        x, attrs = self._ask(h, trials, trial.number)
        if attrs:
            study._storage.set_trial_system_attr(trial._trial_id, key, attrs)
        return h.codec.decode(x)[param_name]

    # -- internals -----------------------------------------------------------------------------------------

    def _state(self, study: _optuna.Study) -> _StudyState:
        st = self._studies.get(study)
        if len(st.directions) > 1 and self._type not in _VALUE_BLIND:
            raise ValueError(
                f"KubetuneSampler: the kubetune '{self._type}' searcher optimises one objective, the study has "
                f"{len(st.directions)} directions (kt.Sobol and kt.RandomSearch accept several objectives)"
            )
        return st

    def _history(self, st: _StudyState, space: _Space, attrs_key: str, seed: int) -> _History:
        key = (attrs_key, _space_key(space), seed)

        def make() -> _History:
            codec = _Codec(space)
            study = _kt.Study(codec.kt_space, self._config, direction=st.directions, seed=seed)
            return _History(codec, _sampler_row_fn(codec, attrs_key), study, len(st.directions))

        return _history(st, key, make)

    def _ask(self, h: _History, trials: Sequence[_FrozenTrial], number: int) -> tuple[list[float], dict[str, float]]:
        with h.lock:
            h.replay(trials, number, skip=number)
            try:
                t = h.kt_study.ask()
                return list(t.x), dict(t.system_attrs)
            except _kt.SearchExhausted:
                cols = h.all_columns()
        # kubetune searchers never repeat a point; Optuna samplers must answer even when a finite space has been
        # tried in full: the best complete point again for the searchers that read values, else a random one.
        _log.debug("kubetune searcher exhausted the space at trial %d", number)
        best = None if self._type in _VALUE_BLIND else _best_point(cols, h.kt_study.direction)
        if best is not None:
            return best, {}
        fallback = _kt.Study.replay(
            h.codec.kt_space, _kt.RandomSearch(dedupe=False), [], seed=h.kt_study.seed, ask_counter=number
        )
        return list(fallback.ask().x), {}


def _best_point(cols: Mapping[str, Any], direction: str) -> Optional[list[float]]:
    """The point of the best complete trial (objective 0; the first of equals), None without one."""
    complete = _np.flatnonzero(cols["state"] == _COMPLETE)
    if len(complete) == 0:
        return None
    v = cols["values"][complete, 0]
    k = int(_np.argmax(v) if direction == "maximize" else _np.argmin(v))
    return [float(e) for e in cols["x"][complete[k]]]


# ---------------------------------------------------------------------------------------------- pruner


# Pruners read learning curves only: the replayed trials share one dummy parameter.
_PRUNER_SPACE: dict[str, _BaseDistribution] = {"_": _FloatDistribution(0.0, 1.0)}


def _pruner_row(t: _FrozenTrial) -> _Row:
    state = t.state
    values = [t.values[0]] if state == _TrialState.COMPLETE and t.values else None
    if state == _TrialState.COMPLETE and values is None:
        state = _TrialState.FAIL
    return _Row([0.0], _KT_STATE[state], values, _curve(t))


class KubetunePruner(_BasePruner):
    """An Optuna pruner backed by a kubetune pruner (kt.MedianStop, kt.PercentilePruner, kt.ASHAPruner,
    kt.HyperbandPruner).

    On each ``trial.should_prune()`` the study's trials (states and learning curves, in trial-number order, so
    kubetune trial ids are Optuna trial numbers) are replayed into a kubetune study with this pruner, which
    decides about the trial. Pruners read learning curves only, so the replayed trials carry no parameters.

    Args:
        pruner: the kubetune pruner (its configuration is used).
        seed: seed of the replayed study (for pruners that draw random numbers).
    """

    def __init__(self, pruner: _kt.Pruner, *, seed: int = 0) -> None:
        if not isinstance(pruner, _kt.Pruner):
            raise TypeError(
                f"KubetunePruner: pruner must be a kubetune pruner such as kt.MedianStop(), got {type(pruner).__name__}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"KubetunePruner: seed must be an int, got {seed!r}")
        self._config: dict[str, Any] = pruner.config()
        self._seed = seed & _MASK64
        self._studies = _PerStudy()

    def __repr__(self) -> str:
        return f"KubetunePruner({self._config!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self._config, "seed": self._seed}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._config, self._seed = state["config"], state["seed"]
        self._studies = _PerStudy()

    def prune(self, study: _optuna.Study, trial: _FrozenTrial) -> bool:
        st = self._studies.get(study)
        if len(st.directions) != 1:
            raise ValueError(f"KubetunePruner: pruning needs one objective, the study has {len(st.directions)}")

        def make() -> _History:
            codec = _Codec(_PRUNER_SPACE)
            ks = _kt.Study(codec.kt_space, "random", direction=st.directions, seed=self._seed, pruner=self._config)
            return _History(codec, _pruner_row, ks, 1)

        h = _history(st, ("pruner",), make)
        trials = study._get_trials(deepcopy=False, use_cache=False)
        with h.lock:
            ids = h.replay(trials, trial.number, replace=trial)
            if trial.number not in ids:
                return False  # not a running trial of this study
            return bool(h.kt_study.should_prune(ids[trial.number]))
