"""kubetune as a Ray Tune searcher: :class:`KubetuneSearch` lets a :class:`kubetune.Study` pick Tune's configs.

The search itself (TPE, GP, Sobol, ...) happens in the kubetune study; this module only converts between
Ray's world and the study's:

* Ray search-space primitives (``tune.uniform``, ``loguniform``, ``quniform``, ``randint``, ``lograndint``,
  ``qrandint``, ``choice``; nested dicts flattened with ``"/"``; constants passed through) become a
  :class:`kubetune.SearchSpace`; anything without an exact kubetune equivalent is refused with a
  ``ValueError`` naming its key. A ``kubetune.SearchSpace`` can be given directly too.
* ``suggest`` is ``study.ask()``, ``on_trial_result`` is ``study.report(step, value)``, ``on_trial_complete``
  is ``study.tell`` (failed on error). ``save``/``restore`` write JSON (the study's own JSON plus the map of
  Ray trial ids to study trial ids), so ``Tuner.restore`` continues the same study.

Bounds follow Ray 2.x (``ray/tune/search/sample.py``): ``randint``/``lograndint`` exclude ``upper``;
quantized domains draw the multiples of ``q`` inside ``[lower, upper]`` (upper included, except for integer
domains with ``q == 1``, which stay upper-exclusive).
"""
from __future__ import annotations

import copy as _copy
import json as _json
import logging as _logging
import math as _math
import numbers as _numbers
import random as _random
import typing as _typing
from dataclasses import dataclass as _dataclass
from dataclasses import field as _field
from typing import Mapping as _Mapping

from ray.tune.search import Searcher as _Searcher
from ray.tune.search.sample import Categorical as _Categorical
from ray.tune.search.sample import Domain as _Domain
from ray.tune.search.sample import Float as _Float
from ray.tune.search.sample import Integer as _Integer
from ray.tune.search.sample import LogUniform as _LogUniform
from ray.tune.search.sample import Quantized as _Quantized
from ray.tune.search.sample import Uniform as _Uniform

from .._kubetune import SearchExhausted as _SearchExhausted
from .._kubetune import Searcher as _KtSearcher
from .._kubetune import SearchSpace as _SearchSpace
from .._kubetune import Study as _Study
from .._kubetune import TrialState as _TrialState
from .._kubetune import make_searcher as _make_searcher

if _typing.TYPE_CHECKING:
    from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["KubetuneSearch", "SearcherSpec", "from_ray_space"]

_logger = _logging.getLogger(__name__)

_FORMAT = "kubetune.ray_search"
_VERSION = 1
_SEP = "/"  # Ray's separator for flattened nested keys (ray.tune.utils.util.flatten_dict)
_MODES = {"min": "minimize", "max": "maximize"}
_LIVE = (_TrialState.RUNNING, _TrialState.PENDING)

_Path = _typing.Tuple[_typing.Any, ...]
#: What ``KubetuneSearch(searcher=...)`` accepts: a kubetune searcher, a registered type name, a config dict or None.
SearcherSpec = _typing.Union[_KtSearcher, str, _Mapping[str, _typing.Any], None]


# ---- space conversion ------------------------------------------------------------------------------------
@_dataclass(frozen=True)
class _Param:
    """One study parameter: its name in the study, its place in the Ray config, a categorical's values."""

    name: str
    path: _Path
    choices: Optional[Tuple[Any, ...]] = None  # original values of a ``tune.choice``, in label order
    labels: Optional[Tuple[str, ...]] = None  # the study's categorical labels for them


@_dataclass
class _Layout:
    """How a Ray config maps onto a kubetune space (picklable: the native space travels as JSON)."""

    space: _SearchSpace
    params: List[_Param]
    constants: List[Tuple[_Path, Any]] = _field(default_factory=list)

    def __getstate__(self) -> Dict[str, Any]:
        return {"space": self.space.to_json(), "params": self.params, "constants": self.constants}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.space = _SearchSpace.from_json(state["space"])
        self.params = state["params"]
        self.constants = state["constants"]

    def to_json(self) -> Optional[Dict[str, Any]]:
        """The Ray side of the layout as JSON, or None when a choice or constant would not come back equal."""
        data = {
            "params": [{"name": p.name, "path": list(p.path), "choices": p.choices and list(p.choices),
                        "labels": p.labels and list(p.labels)} for p in self.params],
            "constants": [{"path": list(path), "value": value} for path, value in self.constants],
        }
        try:
            text = _json.dumps(data)
        except (TypeError, ValueError):
            return None
        return data if _json.loads(text) == data else None  # tuples, int keys, NaN: not kept by JSON

    @staticmethod
    def from_json(data: _Mapping[str, Any], space: _SearchSpace) -> _Layout:
        params = [_Param(p["name"], tuple(p["path"]), p["choices"] and tuple(p["choices"]),
                         p["labels"] and tuple(p["labels"])) for p in data["params"]]
        constants = [(tuple(c["path"]), c["value"]) for c in data["constants"]]
        return _Layout(space, params, constants)


def _key(path: _Path) -> str:
    return _SEP.join(str(k) for k in path)


def _is_grid(node: Any) -> bool:
    # Ray's spellings of a grid and of an eval-lambda (ray.tune.search.variant_generator._try_resolve).
    return isinstance(node, _Mapping) and len(node) == 1 and ("grid_search" in node or "eval" in node)


def _contains_domain(node: Any) -> bool:
    if isinstance(node, _Domain) or _is_grid(node):
        return True
    if isinstance(node, _Mapping):
        return any(_contains_domain(v) for v in node.values())
    if isinstance(node, (list, tuple)):
        return any(_contains_domain(v) for v in node)
    return False


def _leaves(node: _Mapping[Any, Any], prefix: _Path = ()) -> Iterator[Tuple[_Path, Any]]:
    for k, v in node.items():
        path = prefix + (k,)
        if isinstance(v, _Mapping) and v and not _is_grid(v):
            yield from _leaves(v, path)
        else:
            yield path, v


def _snap(bound: float, q: float, round_fn: Any) -> float:
    """A bound moved inwards onto the multiples of ``q`` (as Ray's ``Quantized._grid_index``)."""
    scaled = bound / q
    if _math.isclose(scaled, round(scaled)):
        return bound
    return float(round_fn(scaled) * q)


def _labels(choices: Sequence[Any]) -> Tuple[str, ...]:
    if all(isinstance(c, str) for c in choices):
        return tuple(choices)
    if all(c is None or isinstance(c, (bool, int, float)) for c in choices):
        return tuple(_json.dumps(c) for c in choices)  # "1", "0.5", "true", "null": readable and distinct
    return tuple(str(i) for i in range(len(choices)))


def _refuse(key: str, what: str) -> ValueError:
    return ValueError(f"KubetuneSearch: parameter {key!r}: {what}")


def _finite(key: str, lower: Any, upper: Any) -> Tuple[float, float]:
    lo, hi = float(lower), float(upper)
    if not (_math.isfinite(lo) and _math.isfinite(hi)):
        raise _refuse(key, f"needs finite bounds, got lower={lower!r} upper={upper!r}")
    return lo, hi


def _add_float(space: _SearchSpace, key: str, dom: _Float, sampler: Any, q: Optional[float]) -> None:
    lo, hi = _finite(key, dom.lower, dom.upper)
    log = isinstance(sampler, _LogUniform)
    if q is None:
        space.add_float(key, lo, hi, log=log)
    elif log:
        raise _refuse(key, "qloguniform has no exact kubetune equivalent (a log scale takes no step)")
    else:
        space.add_float(key, _snap(lo, q, _math.ceil), _snap(hi, q, _math.floor), step=float(q))


def _add_int(space: _SearchSpace, key: str, dom: _Integer, sampler: Any, q: Optional[float]) -> None:
    lo, hi = _finite(key, dom.lower, dom.upper)
    if not (lo.is_integer() and hi.is_integer()):
        raise _refuse(key, f"integer bounds must be whole numbers, got lower={dom.lower!r} upper={dom.upper!r}")
    log = isinstance(sampler, _LogUniform)
    if q is None or q == 1:  # Ray: upper is exclusive
        space.add_int(key, int(lo), int(hi) - 1, log=log)
        return
    if log:
        raise _refuse(key, "qlograndint with q != 1 has no exact kubetune equivalent (a log scale takes no step)")
    if not float(q).is_integer() or q < 1:
        raise _refuse(key, f"integer quantization q must be a positive whole number, got {q!r}")
    step = int(q)
    first, last = _math.ceil(lo / step) * step, _math.floor(hi / step) * step  # multiples of q, upper included
    if last < first:
        raise _refuse(key, f"no multiple of q={step} lies in [{dom.lower}, {dom.upper}]")
    space.add_int(key, first, last, step=step)


def _untyped(obj: Any) -> Any:
    """`obj` as Any: ray.tune.search.sample is unannotated (keeps mypy --strict quiet)."""
    return obj


def _add_domain(space: _SearchSpace, path: _Path, dom: _Domain) -> _Param:
    key = _key(path)
    sampler: Any = _untyped(dom).get_sampler()
    q = None
    if isinstance(sampler, _Quantized):
        q, sampler = sampler.q, _untyped(sampler).get_sampler()
    kind = type(dom).__name__
    if isinstance(dom, (_Float, _Integer)) and not isinstance(sampler, (_Uniform, _LogUniform)):
        raise _refuse(key, f"{kind} domain with sampler {type(sampler).__name__} (e.g. randn) is not supported;"
                      " use uniform, loguniform, quniform, randint, lograndint or qrandint")
    if isinstance(dom, _Float):
        _add_float(space, key, dom, sampler, q)
    elif isinstance(dom, _Integer):
        _add_int(space, key, dom, sampler, q)
    elif isinstance(dom, _Categorical) and isinstance(sampler, _Uniform):
        choices = tuple(dom.categories)
        if any(_contains_domain(c) for c in choices):
            raise _refuse(key, "a tune.choice whose options hold search-space primitives is not supported")
        labels = _labels(choices)
        space.add_categorical(key, list(labels))
        return _Param(key, path, choices, labels)
    else:
        raise _refuse(key, f"{kind} domain (sample_from, grid_search or a custom sampler) is not supported")
    return _Param(key, path)


def _layout_from_ray(config: _Mapping[str, Any]) -> _Layout:
    space = _SearchSpace()
    params: List[_Param] = []
    constants: List[Tuple[_Path, Any]] = []
    seen: Dict[str, _Path] = {}
    for path, value in _leaves(config):
        key = _key(path)
        if key in seen:
            raise _refuse(key, f"two config entries flatten to the same key: {seen[key]!r} and {path!r}")
        seen[key] = path
        if isinstance(value, _Domain):
            params.append(_add_domain(space, path, value))
        elif _is_grid(value):
            raise _refuse(key, f"{next(iter(value))!r} is not supported; use tune.choice for a categorical")
        elif _contains_domain(value):
            raise _refuse(key, "search-space primitives inside lists or tuples are not supported")
        else:
            constants.append((path, value))
    return _Layout(space, params, constants)


def _layout_from_kt(space: _SearchSpace) -> _Layout:
    return _Layout(space, [_Param(n, tuple(n.split(_SEP))) for n in space.names])


def from_ray_space(config: _Mapping[str, Any]) -> _SearchSpace:
    """The kubetune space of a Ray Tune ``param_space`` (nested keys joined with ``"/"``, constants dropped)."""
    if not isinstance(config, _Mapping):
        raise TypeError(f"from_ray_space: config must be a dict, got {type(config).__name__}")
    return _layout_from_ray(config).space


# ---- config <-> params -----------------------------------------------------------------------------------
def _put(config: Dict[Any, Any], path: _Path, value: Any) -> None:
    node = config
    for k in path[:-1]:
        node = node.setdefault(k, {})
    node[path[-1]] = value


def _find(config: _Mapping[Any, Any], p: _Param) -> Any:
    if p.name in config:  # a flattened config
        return config[p.name]
    node: Any = config
    for k in p.path:
        if not isinstance(node, _Mapping) or k not in node:
            raise KeyError(p.name)
        node = node[k]
    return node


def _label_of(p: _Param, value: Any) -> str:
    assert p.choices is not None and p.labels is not None
    for i, c in enumerate(p.choices):  # same type first, so True and 1 stay apart
        if type(c) is type(value) and c == value:
            return p.labels[i]
    for i, c in enumerate(p.choices):
        if c == value:
            return p.labels[i]
    raise ValueError(f"KubetuneSearch: parameter {p.name!r}: {value!r} is not one of {list(p.choices)!r}")


def _searcher_config(searcher: SearcherSpec) -> Optional[Dict[str, Any]]:
    if searcher is None:
        return None
    if isinstance(searcher, _KtSearcher):
        return searcher.config()
    if isinstance(searcher, (str, _Mapping)):
        return _make_searcher(dict(searcher) if isinstance(searcher, _Mapping) else searcher).config()
    raise TypeError(f"KubetuneSearch: searcher must be a kubetune Searcher, a name or a config dict, "
                    f"got {type(searcher).__name__}")


def _check_mode(mode: Optional[str]) -> None:
    if mode is not None and mode not in _MODES:
        raise ValueError(f"KubetuneSearch: mode must be 'min' or 'max', got {mode!r}")


def _check_metric(metric: Optional[str]) -> None:
    if metric is not None and not isinstance(metric, str):
        raise TypeError(f"KubetuneSearch: metric must be one metric name (str), got {metric!r}")


# ---- the searcher ----------------------------------------------------------------------------------------
class KubetuneSearch(_Searcher):
    """A Ray Tune searcher backed by a :class:`kubetune.Study`.

    Args:
        searcher: the kubetune searcher (``kt.TPE()``, ``kt.GP()``, ``kt.Sobol()``, ...), a registered name
            or a config dict (``kt.make_searcher``); None takes the Study's default.
        metric: the result key to optimise (or ``TuneConfig(metric=...)``).
        mode: ``"min"`` or ``"max"`` (or ``TuneConfig(mode=...)``).
        space: a Ray search space (dict of ``tune.*`` primitives, nested dicts allowed) or a
            ``kt.SearchSpace``; None takes the Tuner's ``param_space``.
        seed: the study's seed; None draws one (kept across pickling and ``save``).
        step_key: the result key used as the step of intermediate values.

    A trial stopped by a scheduler (ASHA, ...) is told with its last result, as Ray marks it done; a trial
    that errored is told failed. Trials Ray re-runs under a new id (``restart_errored``) are recorded from
    their final result's config.
    """

    def __init__(
        self,
        searcher: SearcherSpec = None,
        metric: Optional[str] = None,
        mode: Optional[str] = None,
        space: Union[_Mapping[str, Any], _SearchSpace, None] = None,
        *,
        seed: Optional[int] = None,
        step_key: str = "training_iteration",
    ) -> None:
        _check_mode(mode)
        _check_metric(metric)
        if seed is not None and (not isinstance(seed, _numbers.Integral) or isinstance(seed, bool) or seed < 0):
            raise ValueError(f"KubetuneSearch: seed must be a non-negative int or None, got {seed!r}")
        super().__init__(metric=metric, mode=mode)
        self._searcher = _searcher_config(searcher)
        self._seed = _random.SystemRandom().randrange(2**32) if seed is None else int(seed)
        self._step_key = step_key
        self._layout: Optional[_Layout] = None
        if isinstance(space, _SearchSpace):
            self._layout = _layout_from_kt(_SearchSpace.from_json(space.to_json()))
        elif isinstance(space, _Mapping):
            self._layout = _layout_from_ray(space)
        elif space is not None:
            raise TypeError(f"KubetuneSearch: space must be a dict or a kubetune SearchSpace, "
                            f"got {type(space).__name__}")
        self._study: Optional[_Study] = None
        self._ids: Dict[str, int] = {}  # Ray trial id -> study trial id

    # -- inspection --
    @property
    def space(self) -> Optional[_SearchSpace]:
        """The kubetune space searched (None until one is set)."""
        return self._layout.space if self._layout else None

    @property
    def study(self) -> Optional[_Study]:
        """The kubetune study (None before the first suggestion or restore)."""
        return self._study

    @property
    def trial_ids(self) -> Dict[str, int]:
        """Ray trial id -> study trial id, for the trials this searcher suggested or recorded."""
        return dict(self._ids)

    # -- Ray's Searcher API --
    def set_search_properties(self, metric: Optional[str], mode: Optional[str], config: Dict[str, Any],
                              **spec: Any) -> bool:
        _check_mode(mode)
        _check_metric(metric)
        if config and _contains_domain(config):
            if self._layout is not None:
                return False  # Ray then reports that the space was given twice
            self._layout = _layout_from_ray(config)
        for name, given in (("metric", metric), ("mode", mode)):
            ours = getattr(self, "_" + name)
            if given and ours and given != ours:
                raise ValueError(f"KubetuneSearch: {name} {given!r} from the Tuner conflicts with {ours!r}")
            if given:
                setattr(self, "_" + name, given)
        return True

    def suggest(self, trial_id: str) -> Optional[Dict[str, Any]]:
        study = self._ensure_study()
        try:
            trial = study.ask()
        except _SearchExhausted:
            return _Searcher.FINISHED  # type: ignore[return-value]  # Ray's marker string
        self._ids[trial_id] = trial.id
        return self._decode(trial.params)

    def on_trial_result(self, trial_id: str, result: Dict[str, Any]) -> None:
        kt_id = self._live_id(trial_id)
        if kt_id is None or self._metric not in result:
            return  # Ray: intermediate results may lack the metric
        step = self._step(result)
        if step is not None:
            self._require_study().report(kt_id, step, self._value(trial_id, result))

    def on_trial_complete(self, trial_id: str, result: Optional[Dict[str, Any]] = None,
                          error: bool = False) -> None:
        kt_id = self._live_id(trial_id)
        if kt_id is None:
            self._record_unknown(trial_id, result, error)
            return
        study = self._require_study()
        if error or not result:  # no result: removed before it reported anything
            study.tell(kt_id, state="failed")
            return
        if self._metric not in result:
            study.tell(kt_id, state="failed")
            raise ValueError(f"KubetuneSearch: trial {trial_id}: metric {self._metric!r} is missing from the "
                             f"result (keys: {sorted(map(str, result))[:25]})")
        value = self._value(trial_id, result)
        step = self._step(result)
        if step is not None:
            study.report(kt_id, step, value)
        study.tell(kt_id, value)  # a NaN makes it failed

    def add_evaluated_point(self, parameters: Dict[str, Any], value: Optional[float], error: bool = False,
                            pruned: bool = False, intermediate_values: Optional[List[float]] = None) -> None:
        """Record a trial evaluated outside this searcher (``parameters`` nested or flattened with "/")."""
        study = self._ensure_study()
        params = self._encode(parameters)
        number = None if value is None else float(value)
        state = "failed" if error else "pruned" if pruned else "complete"
        if state == "complete" and (number is None or _math.isnan(number)):
            state = "failed"
        steps = {i + 1: float(v) for i, v in enumerate(intermediate_values or [])}
        study.add_trial(params, number if state == "complete" else None, state=state, intermediate=steps or None)

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        return False  # ConcurrencyLimiter limits; the study's constant liar spreads the pending points

    # -- persistence --
    def get_state(self) -> Dict[str, Any]:
        """The searcher's state as JSON-ready data: the study's JSON plus the trial-id map."""
        layout = self._layout.to_json() if self._layout else None
        return {
            "format": _FORMAT, "version": _VERSION, "metric": self._metric, "mode": self._mode,
            "seed": self._seed, "step_key": self._step_key, "searcher": self._searcher, "layout": layout,
            "space": self._layout.space.to_json() if self._layout else None,
            "study": self._study.to_json() if self._study is not None else None, "trials": dict(self._ids),
        }

    def set_state(self, state: _Mapping[str, Any]) -> None:
        if not isinstance(state, _Mapping) or state.get("format") != _FORMAT:
            raise ValueError(f"KubetuneSearch: not a {_FORMAT} state (format={_get(state, 'format')!r})")
        if state.get("version") != _VERSION:
            raise ValueError(f"KubetuneSearch: unsupported state version {state.get('version')!r}")
        for name in ("metric", "mode"):
            ours, saved = getattr(self, "_" + name), state.get(name)
            if ours and saved and ours != saved:
                raise ValueError(f"KubetuneSearch: saved {name} {saved!r} differs from this searcher's {ours!r}")
        try:  # everything is read before anything is assigned: a bad state leaves the searcher as it was
            study = _Study.from_json(state["study"]) if state["study"] is not None else None
            layout = self._restored_layout(state, study)
            ids = {str(k): int(v) for k, v in state["trials"].items()}
            seed, step_key, searcher = int(state["seed"]), str(state["step_key"]), state["searcher"]
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"KubetuneSearch: malformed saved state ({type(e).__name__}: {e})") from e
        self._layout, self._study, self._ids = layout, study, ids
        self._seed, self._step_key, self._searcher = seed, step_key, searcher
        self._metric = self._metric or state.get("metric")
        self._mode = self._mode or state.get("mode")

    def _restored_layout(self, state: _Mapping[str, Any], study: Optional[_Study]) -> Optional[_Layout]:
        space_json = state["space"] if study is None else study.space.to_json()
        if space_json is None:
            return self._layout
        if self._layout is not None:
            if self._layout.space.to_json() != space_json:
                raise ValueError("KubetuneSearch: the saved study searched a different space than this searcher's")
            return self._layout
        if state.get("layout") is None:
            raise ValueError("KubetuneSearch: the saved state's choices/constants do not survive JSON; pass "
                             "param_space to Tuner.restore, or build the searcher with the same space")
        return _Layout.from_json(state["layout"], _SearchSpace.from_json(space_json))

    def save(self, checkpoint_path: str) -> None:
        """Write the state as JSON (Ray names the file ``searcher-state-*.pkl``; the content is JSON)."""
        with open(checkpoint_path, "w", encoding="utf-8") as f:
            _json.dump(self.get_state(), f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, encoding="utf-8") as f:
            try:
                state = _json.load(f)
            except _json.JSONDecodeError as e:
                raise ValueError(f"KubetuneSearch: {checkpoint_path!r} is not a saved KubetuneSearch state: {e}")
        self.set_state(state)

    def __getstate__(self) -> Dict[str, Any]:
        # Ray pickles the searcher with the Tuner (tuner.pkl); the native study travels as its JSON.
        state = self.__dict__.copy()
        state["_study"] = self._study.to_json() if self._study is not None else None
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        study = state.get("_study")
        self.__dict__.update(state)
        self._study = _Study.from_json(study) if study is not None else None

    # -- helpers --
    def _ensure_study(self) -> _Study:
        if self._study is None:
            if self._layout is None:
                raise RuntimeError("KubetuneSearch: no search space; pass space= or a Tuner param_space")
            if self._metric is None or self._mode is None:
                raise RuntimeError("KubetuneSearch: metric and mode are not set; pass them to KubetuneSearch "
                                   "or to tune.TuneConfig(metric=..., mode=...)")
            self._study = _Study(self._layout.space, self._searcher, direction=_MODES[self._mode],
                                 seed=self._seed)
        return self._study

    def _require_study(self) -> _Study:
        assert self._study is not None
        return self._study

    def _live_id(self, trial_id: str) -> Optional[int]:
        kt_id = self._ids.get(trial_id)
        if kt_id is None or self._study is None or self._study.trial(kt_id).state not in _LIVE:
            return None
        return kt_id

    def _value(self, trial_id: str, result: _Mapping[str, Any]) -> float:
        raw = result[str(self._metric)]
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise TypeError(f"KubetuneSearch: trial {trial_id}: metric {self._metric!r} must be a number, "
                            f"got {raw!r}") from None

    def _step(self, result: _Mapping[str, Any]) -> Optional[int]:
        raw = result.get(self._step_key)
        if raw is None:
            return None
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise TypeError(f"KubetuneSearch: step_key {self._step_key!r} must hold an int, got {raw!r}") from None

    def _decode(self, params: _Mapping[str, Any]) -> Dict[str, Any]:
        assert self._layout is not None
        config: Dict[Any, Any] = {}
        for path, value in self._layout.constants:
            _put(config, path, _copy.deepcopy(value))
        for p in self._layout.params:
            value = params[p.name]
            if p.choices is not None and p.labels is not None:
                value = _copy.deepcopy(p.choices[p.labels.index(value)])
            _put(config, p.path, value)
        return config

    def _encode(self, config: _Mapping[str, Any]) -> Dict[str, Any]:
        assert self._layout is not None
        params: Dict[str, Any] = {}
        for p in self._layout.params:
            try:
                value = _find(config, p)
            except KeyError:
                raise ValueError(f"KubetuneSearch: parameter {p.name!r} is missing from the config") from None
            params[p.name] = _label_of(p, value) if p.choices is not None else value
        return params

    def _record_unknown(self, trial_id: str, result: Optional[_Mapping[str, Any]], error: bool) -> None:
        """A trial this searcher did not suggest (or already closed), e.g. an errored one Ray restarted."""
        if trial_id in self._ids or not result or self._layout is None:
            _logger.debug("trial %s: completion of a closed or unknown trial without a result, ignored", trial_id)
            return
        config = result.get("config")
        if not isinstance(config, _Mapping):  # Ray flattens results: config/a/b
            config = {k[len("config/"):]: v for k, v in result.items() if str(k).startswith("config/")}
        try:
            params = self._encode(config)
        except ValueError as e:
            _logger.debug("trial %s: cannot record its config: %s", trial_id, e)
            return
        value = self._value(trial_id, result) if self._metric in result and not error else None
        ok = value is not None and not _math.isnan(value)
        kt_id = self._ensure_study().add_trial(params, value if ok else None, state="complete" if ok else "failed")
        self._ids[trial_id] = kt_id


def _get(state: Any, key: str) -> Any:
    return state.get(key) if isinstance(state, _Mapping) else None
