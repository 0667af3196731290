"""Katib's ``Suggestion`` gRPC service (``api.v1beta1.Suggestion``) answered by kubetune's searchers.

Every decision (space, settings, trial states, replay, bookkeeping) is made in C++ (``kubetune/core/katib.hpp``);
this module converts Katib's protobuf messages (from the ``kubeflow-katib`` package) to the plain shapes that code
reads and back. Each GetSuggestions call carries every trial of the experiment and the answer depends on that
request alone, so a restarted service pod continues an experiment exactly where it was.
"""
from __future__ import annotations

import logging as _logging
import typing as _typing

import grpc as _grpc
from kubeflow.katib import katib_api_pb2 as _pb
from kubeflow.katib import katib_api_pb2_grpc as _pb_grpc

from .. import _kubetune

if _typing.TYPE_CHECKING:
    from typing import Any, Callable, Dict, List

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["SuggestionService", "algorithm_names", "experiment_to_dict", "trial_to_dict"]

_log = _logging.getLogger("kubetune.katib")
_native = _kubetune._katib

_PARAMETER_TYPE = {v.number: v.name for v in _pb.ParameterType.DESCRIPTOR.values}
_DISTRIBUTION = {v.number: v.name for v in _pb.Distribution.DESCRIPTOR.values}
_OBJECTIVE = {v.number: v.name for v in _pb.ObjectiveType.DESCRIPTOR.values}
_CONDITION = {v.number: v.name for v in _pb.TrialStatus.TrialConditionType.DESCRIPTOR.values}


def experiment_to_dict(experiment: Any) -> Dict[str, Any]:
    """``katib_api_pb2.Experiment`` -> the experiment dict of ``kubetune/core/katib.hpp``."""
    spec = experiment.spec
    params = []
    for p in spec.parameter_specs.parameters:
        fs = p.feasible_space
        params.append({
            "name": p.name,
            "type": _PARAMETER_TYPE.get(p.parameter_type, str(p.parameter_type)),
            "min": fs.min,
            "max": fs.max,
            "step": fs.step,
            "list": list(fs.list),
            "distribution": _DISTRIBUTION.get(fs.distribution, str(fs.distribution)),
        })
    return {
        "name": experiment.name,
        "algorithm": {
            "name": spec.algorithm.algorithm_name,
            "settings": [[s.name, s.value] for s in spec.algorithm.algorithm_settings],
        },
        "objective": {
            "type": _OBJECTIVE.get(spec.objective.type, str(spec.objective.type)),
            "metric": spec.objective.objective_metric_name,
        },
        "parameters": params,
        "parallel_trial_count": spec.parallel_trial_count,
        "max_trial_count": spec.max_trial_count,
    }


def trial_to_dict(trial: Any) -> Dict[str, Any]:
    """``katib_api_pb2.Trial`` -> the trial dict of ``kubetune/core/katib.hpp``."""
    return {
        "name": trial.name,
        "start_time": trial.status.start_time,
        "condition": _CONDITION.get(trial.status.condition, str(trial.status.condition)),
        "assignments": [[a.name, a.value] for a in trial.spec.parameter_assignments.assignments],
        "metrics": [[m.name, m.value] for m in trial.status.observation.metrics],
    }


def _reply(result: Dict[str, Any], algorithm_name: str) -> Any:
    reply = _pb.GetSuggestionsReply(parameter_assignments=[
        _pb.GetSuggestionsReply.ParameterAssignments(
            assignments=[_pb.ParameterAssignment(name=n, value=v) for n, v in a])
        for a in result["assignments"]
    ])
    if result["state"]:
        reply.algorithm.algorithm_name = algorithm_name
        reply.algorithm.algorithm_settings.extend(_pb.AlgorithmSetting(name=n, value=v) for n, v in result["state"])
    return reply


def _fail(context: Any, code: Any, message: str, empty: Callable[[], Any]) -> Any:
    _log.warning("%s: %s", code.name, message)
    context.set_code(code)
    context.set_details(message)
    return empty()


class SuggestionService(_pb_grpc.SuggestionServicer):
    """Katib's Suggestion service over kubetune's searchers.

    Algorithms under Katib's names (random, grid, sobol, tpe, multivariate-tpe, bayesianoptimization, hyperband,
    darts) and kubetune's own (gp, bohb, asha), with Katib's setting names. Invalid input answers
    INVALID_ARGUMENT naming the setting, parameter, trial or metric; a searcher that must wait for running
    trials (a Hyperband rung) answers UNAVAILABLE, which Katib's controller retries.
    """

    def GetSuggestions(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC method name)
        return self._suggest(request.SerializeToString(), context, lambda: request)

    def GetSuggestionsWire(self, blob: bytes, context: Any) -> Any:  # noqa: N802
        """GetSuggestions on the serialized request, as the gRPC server receives it (``serve`` registers this
        one: no Python message is built for thousands of trials)."""
        return self._suggest(blob, context, lambda: _pb.GetSuggestionsRequest.FromString(blob))

    def _suggest(self, blob: bytes, context: Any, message: Callable[[], Any]) -> Any:
        try:
            # The C++ side reads the serialized message itself (as experiment_to_dict and trial_to_dict would
            # convert it, without a Python object per field).
            result = _native.get_suggestions_wire(blob)
        except (ValueError, KeyError, TypeError) as exc:
            request = message()
            if request.experiment.spec.algorithm.algorithm_name != "darts":
                return _fail(context, _grpc.StatusCode.INVALID_ARGUMENT, _message(exc), _pb.GetSuggestionsReply)
            return self._darts(request, context)
        if result["waiting"]:
            return _fail(context, _grpc.StatusCode.UNAVAILABLE,
                         f"{result['algorithm']}: {len(result['assignments'])} of {result['count']} suggestions can "
                         "be made until running trials finish (retry later)", _pb.GetSuggestionsReply)
        _log.info("experiment %s: %d trials -> %d suggestions (%s)", result["experiment"], result["trials"],
                  len(result["assignments"]), result["algorithm"])
        return _reply(result, result["algorithm"])

    @staticmethod
    def _darts(request: Any, context: Any) -> Any:
        from . import darts

        # Katib's DARTS is one trial that runs the whole search: handed out once, then exhausted.
        try:
            one = darts.darts_suggestions(request.experiment, request.trials, request.current_request_number)
        except (ValueError, KeyError, TypeError) as exc:
            return _fail(context, _grpc.StatusCode.INVALID_ARGUMENT, _message(exc), _pb.GetSuggestionsReply)
        return _reply({"assignments": one, "state": []}, "darts")

    def ValidateAlgorithmSettings(self, request: Any, context: Any) -> Any:  # noqa: N802
        try:
            if request.experiment.spec.algorithm.algorithm_name == "darts":
                from . import darts

                darts.validate_darts_settings(request.experiment)
            else:
                _native.validate_algorithm_settings(experiment_to_dict(request.experiment))
        except (ValueError, KeyError, TypeError) as exc:
            return _fail(context, _grpc.StatusCode.INVALID_ARGUMENT, _message(exc), _pb.ValidateAlgorithmSettingsReply)
        return _pb.ValidateAlgorithmSettingsReply()


def _message(exc: BaseException) -> str:
    # KeyError's str() adds quotes; the native layer's messages are already complete sentences.
    return exc.args[0] if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], str) else str(exc)


def algorithm_names() -> List[str]:
    """Every algorithm name the Suggestion service answers."""
    return sorted(list(_native.algorithm_names()) + ["darts"])


