"""Katib's ``darts`` algorithm: the one DARTS trial of an Experiment, its validation and its settings.

Katib's DARTS suggestion service (kubeflow/katib, pkg/suggestion/v1beta1/nas/darts/service.py) does not search
itself: it answers the first GetSuggestions with ONE trial whose three assignments carry the whole search to the
trial container, which runs DARTS there (Katib's image: examples/v1beta1/trial-images/darts-cnn-cifar10; kubetune's:
``kubetune-darts-trial``, :mod:`kubetune.katib.darts_trial`). The wire format, as Katib writes it:

* ``algorithm-settings``: the settings dict as JSON with every ``"`` turned into ``'``. Katib's defaults are
  numbers (``'w_lr': 0.025``); a setting given in the Experiment replaces its default IN PLACE with the
  Experiment's string (``'num_epochs': '3'``), and the string ``"None"`` becomes JSON ``null``.
* ``search-space``: the JSON list of operation names with ``'`` quotes, one per operation type and filter size
  (``'dilated_convolution_5x5'``); ``skip_connection`` has no size. ``none`` is not listed: the trial adds it.
* ``num-layers``: ``str(nas_config.graph_config.num_layers)``.

Validation follows Katib's ranges for each setting; unlike Katib it also rejects setting names it does not know
(Katib silently passes a typo such as ``num_epoch`` on and the trial ignores it), operation types and filter sizes
that no DARTS trial can build, duplicate operations and a missing ``num_layers``.

Nothing here prints; this module only converts types.
"""
from __future__ import annotations

import json as _json
import math as _math
import typing as _t
from dataclasses import dataclass as _dataclass

from .. import _kubetune

del annotations

__all__ = [
    "DARTS_SETTING_DEFAULTS",
    "KATIB_DARTS_OPERATION_TYPES",
    "KUBETUNE_SETTING_NAMES",
    "darts_assignments",
    "darts_replay_done",
    "darts_search_space",
    "darts_suggestions",
    "format_katib_literal",
    "parse_darts_setting",
    "parse_darts_settings",
    "validate_darts_settings",
]

_SettingValue = _t.Union[int, float, None]

_nas_native = getattr(_kubetune, "nas", None)  # None when the extension was built without the nas module


def _native() -> _t.Any:
    if _nas_native is None:
        raise ImportError("kubetune was built without the nas module (Katib's darts needs it)")
    return _nas_native


@_dataclass(frozen=True)
class _Setting:
    kind: type  # int or float
    default: _t.Union[int, float]
    minimum: _t.Union[int, float]
    strict: bool = False  # value must be > minimum (else >=)
    allow_none: bool = False


# Katib's DARTS settings, defaults and accepted ranges, in Katib's order (service.py get_algorithm_settings and
# validate_algorithm_settings): num_epochs > 0; learning rates, weight decays, momentum and clip >= 0;
# batch_size >= 1 or "None"; num_workers >= 0; init_channels, print_step, num_nodes, stem_multiplier >= 1.
_SETTINGS: _t.Dict[str, _Setting] = {
    "num_epochs": _Setting(int, 50, 0, strict=True),
    "w_lr": _Setting(float, 0.025, 0.0),
    "w_lr_min": _Setting(float, 0.001, 0.0),
    "w_momentum": _Setting(float, 0.9, 0.0),
    "w_weight_decay": _Setting(float, 3e-4, 0.0),
    "w_grad_clip": _Setting(float, 5.0, 0.0),
    "alpha_lr": _Setting(float, 3e-4, 0.0),
    "alpha_weight_decay": _Setting(float, 1e-3, 0.0),
    "batch_size": _Setting(int, 128, 1, allow_none=True),
    "num_workers": _Setting(int, 4, 0),
    "init_channels": _Setting(int, 16, 1),
    "print_step": _Setting(int, 50, 1),
    "num_nodes": _Setting(int, 4, 1),
    "stem_multiplier": _Setting(int, 3, 1),
}

DARTS_SETTING_DEFAULTS: _t.Dict[str, _t.Union[int, float]] = {k: s.default for k, s in _SETTINGS.items()}
"""Katib's DARTS algorithm settings and their defaults, in Katib's order."""

KUBETUNE_SETTING_NAMES: _t.Dict[str, str] = {
    "num_epochs": "epochs",  # argument of kt.nas.DARTS.search
    "w_lr": "w_lr",
    "w_lr_min": "w_lr_min",
    "w_momentum": "w_momentum",
    "w_weight_decay": "w_weight_decay",
    "w_grad_clip": "w_grad_clip",
    "alpha_lr": "alpha_lr",
    "alpha_weight_decay": "alpha_weight_decay",
    "batch_size": "batch_size",
    "init_channels": "channels",
    "num_nodes": "nodes",
    "stem_multiplier": "stem_multiplier",
}
"""Katib setting -> kubetune DARTS argument. ``num_workers`` (data-loader processes) and ``print_step`` (log
interval) have no counterpart: they are validated and passed on, and kubetune's trial ignores them."""

KATIB_DARTS_OPERATION_TYPES: _t.Tuple[str, ...] = (
    tuple(_nas_native.katib_darts_operation_types()) if _nas_native is not None else ()
)
"""``nasConfig.operations[].operationType`` values a DARTS trial builds (the ops of Katib's DARTS trial image)."""


# ------------------------------------------------------------------------------------------ settings
def _bad(name: str, value: _t.Any, why: str) -> ValueError:
    return ValueError(f"algorithm setting '{name}' = {value!r} {why}")


def _range_text(spec: _Setting) -> str:
    op = ">" if spec.strict else ">="
    kind = "an integer" if spec.kind is int else "a number"
    extra = " (or 'None')" if spec.allow_none else ""
    return f"must be {kind} {op} {spec.minimum}{extra}"


def _to_number(name: str, value: _t.Any, spec: _Setting) -> _t.Union[int, float]:
    if isinstance(value, bool):
        raise _bad(name, value, _range_text(spec))
    if spec.kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if _math.isfinite(value) and value == int(value):
                return int(value)
            raise _bad(name, value, _range_text(spec))
        if isinstance(value, str):
            try:
                return int(value)  # Katib validates with int(value): "3" and " 3 " pass, "3.0" does not
            except ValueError:
                raise _bad(name, value, _range_text(spec)) from None
        raise _bad(name, value, _range_text(spec))
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str):
        try:
            out = float(value)
        except ValueError:
            raise _bad(name, value, _range_text(spec)) from None
    else:
        raise _bad(name, value, _range_text(spec))
    if not _math.isfinite(out):
        raise _bad(name, value, "must be a finite number")
    return out


def parse_darts_setting(name: str, value: _t.Any) -> _SettingValue:
    """One Katib DARTS setting as a number: ``value`` is the Experiment's string (``"0.01"``), a number, or
    ``None``/``"None"`` (``batch_size`` only). ValueError names the setting and the value when the name is
    unknown or the value is unparsable or out of Katib's range."""
    spec = _SETTINGS.get(name)
    if spec is None:
        raise ValueError(
            f"unknown algorithm setting {name!r} for algorithm 'darts' (known: {', '.join(_SETTINGS)})"
        )
    if value is None or value == "None":
        if spec.allow_none:
            return None
        raise _bad(name, value, _range_text(spec))
    number = _to_number(name, value, spec)
    if number < spec.minimum or (spec.strict and number == spec.minimum):
        raise _bad(name, value, _range_text(spec))
    return number


def parse_darts_settings(settings: _t.Mapping[str, _t.Any]) -> _t.Dict[str, _SettingValue]:
    """Katib's defaults overlaid with ``settings`` (name -> string or number), every value parsed."""
    out: _t.Dict[str, _SettingValue] = dict(DARTS_SETTING_DEFAULTS)
    for name, value in settings.items():
        out[str(name)] = parse_darts_setting(str(name), value)
    return out


# ------------------------------------------------------------------------------------------ experiment
def _spec(experiment: _t.Any) -> _t.Any:
    from kubeflow.katib import katib_api_pb2

    if not isinstance(experiment, katib_api_pb2.Experiment):
        raise TypeError(f"param 'experiment' must be a katib_api_pb2.Experiment, got {type(experiment).__name__}")
    return experiment.spec


def _operations(spec: _t.Any) -> _t.List[_t.Tuple[str, _t.List[_t.Tuple[str, _t.List[str]]]]]:
    """nas_config.operations as (operation_type, [(parameter name, feasible-space list)]) for the C++ parser."""
    return [
        (str(op.operation_type),
         [(str(p.name), [str(v) for v in p.feasible_space.list]) for p in op.parameter_specs.parameters])
        for op in spec.nas_config.operations.operation
    ]


def darts_search_space(experiment: _t.Any) -> _t.List[str]:
    """The operation names of ``nas_config.operations`` in Katib's order (type + ``_{k}x{k}`` per filter size);
    ValueError naming the field (parsed and validated by the C++ engine, src/nas/katib_ops.cpp)."""
    spec = _spec(experiment)
    present = spec.HasField("nas_config")
    return list(_native().katib_darts_search_space(_operations(spec) if present else [], present))


def _num_layers(spec: _t.Any) -> int:
    return int(_native().katib_darts_num_layers(int(spec.nas_config.graph_config.num_layers)))


def validate_darts_settings(experiment: _t.Any) -> None:
    """Raise ValueError (naming the field or setting and its value) unless ``experiment`` can run as Katib's
    ``darts``: a nas_config with known operations and num_layers >= 1, and only known settings in range."""
    spec = _spec(experiment)
    darts_search_space(experiment)
    _num_layers(spec)
    for setting in spec.algorithm.algorithm_settings:
        parse_darts_setting(setting.name, setting.value)


def format_katib_literal(value: _t.Any) -> str:
    """Katib's string form of a settings dict or an op list: JSON with ``"`` replaced by ``'``."""
    return _json.dumps(value).replace('"', "'")


def _settings_with_overrides(spec: _t.Any) -> _t.Dict[str, _t.Any]:
    out: _t.Dict[str, _t.Any] = dict(DARTS_SETTING_DEFAULTS)
    for setting in spec.algorithm.algorithm_settings:
        # Katib keeps the Experiment's string (not the parsed number), "None" becoming null
        out[setting.name] = None if setting.value == "None" else setting.value
    return out


def darts_assignments(experiment: _t.Any) -> _t.List[_t.Tuple[str, str]]:
    """The assignments of Katib's one DARTS trial, as (name, value) pairs in Katib's order:
    ``algorithm-settings``, ``search-space``, ``num-layers``. Validates first (ValueError)."""
    validate_darts_settings(experiment)
    spec = experiment.spec
    return [
        ("algorithm-settings", format_katib_literal(_settings_with_overrides(spec))),
        ("search-space", format_katib_literal(darts_search_space(experiment))),
        ("num-layers", str(_num_layers(spec))),
    ]


def darts_replay_done(trials: _t.Optional[_t.Iterable[_t.Any]]) -> bool:
    """True once the experiment has any trial: Katib's darts service hands out its single trial only on the
    first request, so with a trial on record (in any state) the space is exhausted."""
    return trials is not None and any(True for _ in trials)


def darts_suggestions(
    experiment: _t.Any, trials: _t.Optional[_t.Iterable[_t.Any]], request_number: int = 1
) -> _t.List[_t.List[_t.Tuple[str, str]]]:
    """The suggestions for a GetSuggestions request: ``[darts_assignments(experiment)]`` while no trial exists
    and at least one is requested, else ``[]``. Never more than one trial (Katib would repeat the same
    assignments ``request_number`` times on its first call; identical copies of one search are dropped)."""
    if isinstance(request_number, bool) or not isinstance(request_number, int):
        raise TypeError(f"param 'request_number' must be an int, got {type(request_number).__name__}")
    if request_number < 0:
        raise ValueError(f"param 'request_number' = {request_number} must be >= 0")
    if request_number == 0 or darts_replay_done(trials):
        return []
    return [darts_assignments(experiment)]
