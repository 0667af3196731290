"""Katib's ``EarlyStopping`` gRPC service (``api.v1.beta1.EarlyStopping``) answered by kubetune's stopping rules.

Katib (kubeflow/katib v1beta1) runs one early-stopping service per Experiment. Its controller calls
``GetEarlyStoppingRules`` with every trial of the experiment and the address of Katib's DB manager; the answer is
at most one static rule (metric, threshold, ``LESS`` for maximize / ``GREATER`` for minimize, ``start_step``) that
each new trial's metrics collector applies once, to its best value so far, at its ``start_step``-th report. When
the rule fires, the collector calls ``SetTrialStatus`` and this service marks the Trial custom resource
``EarlyStopped`` through the Kubernetes API, as Katib's ``medianstop`` service does.

Algorithms and settings (validated in C++, ``kubetune/core/katib_stopping.hpp``):

* ``medianstop`` with Katib's ``min_trials_required`` (default 3) and ``start_step`` (default 4), plus
  ``rule``: ``katib`` (default: Katib's behaviour, the MEAN of the succeeded trials' averages over their first
  ``start_step`` values, so swapping Katib's image for kubetune stops the same trials) or ``median`` (the true
  median stopping rule of Google Vizier).
* ``percentile`` (``percentile`` in [0, 100], default 25; ``min_trials_required``; ``start_step``): Optuna's
  PercentilePruner decision at step ``start_step``.

Only succeeded trials count; their observation logs are read from the DB manager at
``request.db_manager_address`` (service ``DBManager.GetObservationLog``, the objective metric only). Each answer
depends only on the request and the DB contents: nothing is remembered between calls (Katib's own service caches
per-trial averages, so its answer depends on the order of past calls), and a restarted pod answers the same.

Errors: invalid settings or request -> INVALID_ARGUMENT with the C++ message (it names the setting and value);
DB manager unreachable or failing -> UNAVAILABLE naming the address (Katib's controller retries); an unknown trial
in SetTrialStatus -> NOT_FOUND; a Kubernetes API failure -> UNAVAILABLE. Nothing is printed; the module logs to
``logging.getLogger("kubetune.katib")``.
"""
from __future__ import annotations

import datetime as _datetime
import logging as _logging
import math as _math
import os as _os
import threading as _threading
import typing as _typing
from typing import Protocol as _Protocol

import grpc as _grpc
from kubeflow.katib import katib_api_pb2 as _pb
from kubeflow.katib import katib_api_pb2_grpc as _pb_grpc

from .. import _kubetune

if _typing.TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = [
    "DEFAULT_NAMESPACE",
    "NAMESPACE_ENV",
    "SERVICE_ACCOUNT_NAMESPACE_FILE",
    "EarlyStoppingService",
    "KubernetesTrialStatusSetter",
    "TrialStatusSetter",
    "resolve_namespace",
]

_log = _logging.getLogger("kubetune.katib")
_native = _kubetune._katib_stopping

_OBJECTIVE = {v.number: v.name for v in _pb.ObjectiveType.DESCRIPTOR.values}
_SUCCEEDED = _pb.TrialStatus.TrialConditionType.SUCCEEDED

# Where a pod finds its own namespace; Katib's medianstop assumes Trial namespace = service pod namespace.
SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
NAMESPACE_ENV = "KUBETUNE_NAMESPACE"
DEFAULT_NAMESPACE = "default"

# The Trial custom resource and the condition Katib's medianstop appends (kubeflow/katib v0.19,
# pkg/earlystopping/v1beta1/medianstop/service.py; the type is TrialEarlyStopped in trial_types.go).
_GROUP, _VERSION, _PLURAL = "kubeflow.org", "v1beta1", "trials"
_EARLY_STOPPED = "EarlyStopped"
_REASON = "TrialEarlyStopped"
_MESSAGE = "Trial is early stopped"


class TrialStatusSetter(_Protocol):
    """Marks one Katib Trial early-stopped (the side effect of ``SetTrialStatus``).

    Raise ``LookupError`` when the trial does not exist (answered NOT_FOUND), ``ValueError`` for a bad name
    (INVALID_ARGUMENT); anything else is answered UNAVAILABLE.
    """

    def set_early_stopped(self, trial_name: str) -> None:
        ...


def resolve_namespace(namespace: Optional[str] = None, *, environ: Optional[Mapping[str, str]] = None,
                      service_account_file: str = SERVICE_ACCOUNT_NAMESPACE_FILE) -> str:
    """The Trials' namespace: ``namespace``, else ``$KUBETUNE_NAMESPACE``, else the pod's service-account
    namespace file, else ``"default"``."""
    if namespace is not None:
        if not isinstance(namespace, str) or not namespace.strip():
            raise ValueError(f"namespace must be a non-empty string, got {namespace!r}")
        return namespace.strip()
    env = _os.environ if environ is None else environ
    from_env = env.get(NAMESPACE_ENV, "").strip()
    if from_env:
        return from_env
    try:
        with open(service_account_file, encoding="utf-8") as f:
            from_file = f.readline().strip()
    except OSError:
        from_file = ""
    return from_file or DEFAULT_NAMESPACE


def _utc_now() -> _datetime.datetime:
    return _datetime.datetime.now(_datetime.timezone.utc)


class KubernetesTrialStatusSetter:
    """``TrialStatusSetter`` over the official ``kubernetes`` client, as Katib's medianstop does it.

    Reads the Trial (``kubeflow.org/v1beta1``, plural ``trials``) and patches its ``status`` subresource with the
    conditions plus ``{"type": "EarlyStopped", "status": "True", "reason": "TrialEarlyStopped", "message":
    "Trial is early stopped", "lastUpdateTime", "lastTransitionTime"}`` (UTC, RFC 3339). Unlike Katib, which
    sends the whole object back, the merge patch carries only ``status.conditions`` and
    ``metadata.resourceVersion`` (same effect, and the API server still rejects a stale write with 409, which is
    retried up to ``conflict_retries`` times from a fresh read); a trial already early-stopped is left alone.

    Without ``api_client``, the in-cluster configuration is loaded, falling back to the kubeconfig
    (``$KUBECONFIG`` or ``~/.kube/config``); ``close()`` releases a client created here.
    """

    def __init__(self, namespace: Optional[str] = None, *, api_client: Optional[Any] = None,
                 timeout_s: float = 30.0, conflict_retries: int = 3,
                 clock: Callable[[], _datetime.datetime] = _utc_now) -> None:
        from kubernetes import client

        _check_positive("timeout_s", timeout_s)
        if not isinstance(conflict_retries, int) or isinstance(conflict_retries, bool) or conflict_retries < 0:
            raise ValueError(f"conflict_retries must be an int >= 0, got {conflict_retries!r}")
        self.namespace = resolve_namespace(namespace)
        self._timeout_s = float(timeout_s)
        self._retries = conflict_retries
        self._clock = clock
        self._owns_client = api_client is None
        self._api_client = _load_api_client() if api_client is None else api_client
        self._api = client.CustomObjectsApi(self._api_client)

    def close(self) -> None:
        """Closes the API client if this object created it."""
        if self._owns_client:
            self._api_client.close()

    def set_early_stopped(self, trial_name: str) -> None:
        for attempt in range(self._retries + 1):
            trial = self._call("get", trial_name, self._api.get_namespaced_custom_object)
            body = self._patch_body(trial)
            if body is None:
                _log.info("trial %s/%s is already %s", self.namespace, trial_name, _EARLY_STOPPED)
                return
            try:
                self._call("patch status of", trial_name, self._api.patch_namespaced_custom_object_status, body,
                           _content_type="application/merge-patch+json")
            except _Conflict:
                _log.info("trial %s/%s changed while being marked %s (attempt %d); retrying", self.namespace,
                          trial_name, _EARLY_STOPPED, attempt + 1)
                continue
            _log.info("trial %s/%s marked %s", self.namespace, trial_name, _EARLY_STOPPED)
            return
        raise RuntimeError(f"trial {self.namespace}/{trial_name}: status kept changing; gave up after "
                           f"{self._retries + 1} conflicting writes")

    def _patch_body(self, trial: Any) -> Optional[Dict[str, Any]]:
        if not isinstance(trial, dict):
            raise RuntimeError(f"unexpected Trial object from the Kubernetes API: {type(trial).__name__}")
        status = trial.get("status") or {}
        conditions: List[Any] = list(status.get("conditions") or [])
        if any(isinstance(c, dict) and c.get("type") == _EARLY_STOPPED and c.get("status") == "True"
               for c in conditions):
            return None
        now = self._clock().astimezone(_datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions.append({"type": _EARLY_STOPPED, "status": "True", "reason": _REASON, "message": _MESSAGE,
                           "lastUpdateTime": now, "lastTransitionTime": now})
        body: Dict[str, Any] = {"status": {"conditions": conditions}}
        version = (trial.get("metadata") or {}).get("resourceVersion")
        if version:
            body["metadata"] = {"resourceVersion": version}
        return body

    def _call(self, what: str, trial_name: str, method: Callable[..., Any], *body: Any, **options: Any) -> Any:
        """One CustomObjectsApi call on the Trial; HTTP errors become LookupError / _Conflict / RuntimeError."""
        from kubernetes.client.rest import ApiException

        try:
            return method(_GROUP, _VERSION, self.namespace, _PLURAL, trial_name, *body,
                          _request_timeout=self._timeout_s, **options)
        except ApiException as exc:
            where = f"{what} trial {self.namespace}/{trial_name}"
            if exc.status == 404:
                raise LookupError(f"{where}: not found (HTTP 404)") from None
            if exc.status == 409:
                raise _Conflict(where) from None
            raise RuntimeError(f"Kubernetes API: {where}: HTTP {exc.status} {exc.reason}") from None


class _Conflict(Exception):
    """HTTP 409 from a conditional write."""


def _load_api_client() -> Any:
    from kubernetes import client, config

    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except config.ConfigException as in_cluster:
        _log.info("not in a Kubernetes pod (%s); loading the kubeconfig", in_cluster)
        # $KUBECONFIG is read now: the client reads it once, when it is imported.
        config.load_kube_config(config_file=_os.environ.get("KUBECONFIG") or None,
                                client_configuration=configuration, persist_config=False)
    return client.ApiClient(configuration)


def _check_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


class _Failure(Exception):
    def __init__(self, code: _grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _settings(spec: Any) -> List[Tuple[str, str]]:
    return [(s.name, s.value) for s in spec.algorithm_settings]


def _reply_rules(result: Mapping[str, Any]) -> Any:
    return _pb.GetEarlyStoppingRulesReply(early_stopping_rules=[
        _pb.EarlyStoppingRule(name=r["name"], value=r["value_text"],
                              comparison=_pb.ComparisonType.Value(r["comparison"]), start_step=r["start_step"])
        for r in result["rules"]
    ])


class EarlyStoppingService(_pb_grpc.EarlyStoppingServicer):
    """Katib's EarlyStopping service over kubetune's stopping rules (see the module docstring).

    ``trial_status_setter`` marks trials early-stopped; by default a :class:`KubernetesTrialStatusSetter` is made
    on the first ``SetTrialStatus`` (so the service starts without a cluster). ``db_manager_timeout_s`` bounds
    each ``GetObservationLog`` call. One gRPC channel per DB manager address is kept; ``close()`` closes them.
    """

    def __init__(self, *, trial_status_setter: TrialStatusSetter | None = None,
                 db_manager_timeout_s: float = 10.0) -> None:
        super().__init__()
        _check_positive("db_manager_timeout_s", db_manager_timeout_s)
        self._timeout_s = float(db_manager_timeout_s)
        self._setter: Optional[TrialStatusSetter] = trial_status_setter
        self._owns_setter = False
        self._lock = _threading.Lock()
        self._channels: Dict[str, _grpc.Channel] = {}

    def close(self) -> None:
        """Closes the DB manager channels (and a default status setter); later calls open new ones."""
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
            setter = self._setter if self._owns_setter else None
            if setter is not None:
                self._setter, self._owns_setter = None, False
        for channel in channels:
            channel.close()
        if isinstance(setter, KubernetesTrialStatusSetter):
            setter.close()

    def __enter__(self) -> EarlyStoppingService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ gRPC methods

    def GetEarlyStoppingRules(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC method name)
        return self._answer(context, _pb.GetEarlyStoppingRulesReply, lambda: self._rules(request))

    def ValidateEarlyStoppingSettings(self, request: Any, context: Any) -> Any:  # noqa: N802
        def validate() -> Any:
            spec = request.early_stopping
            _native.validate_settings(spec.algorithm_name, _settings(spec))
            return _pb.ValidateEarlyStoppingSettingsReply()

        return self._answer(context, _pb.ValidateEarlyStoppingSettingsReply, validate)

    def SetTrialStatus(self, request: Any, context: Any) -> Any:  # noqa: N802
        return self._answer(context, _pb.SetTrialStatusReply, lambda: self._set_status(request.trial_name))

    # ------------------------------------------------------------------------------------------- internals

    def _answer(self, context: Any, empty: Callable[[], Any], fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except _Failure as exc:
            return _fail(context, exc.code, str(exc), empty)
        except ValueError as exc:
            return _fail(context, _grpc.StatusCode.INVALID_ARGUMENT, str(exc), empty)
        except Exception as exc:  # never let a request take the server down; the caller sees INTERNAL
            _log.exception("early stopping: unexpected error")
            return _fail(context, _grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}", empty)

    def _rules(self, request: Any) -> Any:
        spec = request.experiment.spec
        algorithm = spec.early_stopping.algorithm_name
        settings = _settings(spec.early_stopping)
        metric = spec.objective.objective_metric_name
        objective = _OBJECTIVE.get(spec.objective.type, str(spec.objective.type))
        parsed = _native.parse_rules_request(algorithm, settings, metric, objective)  # before any DB call
        address = request.db_manager_address
        if not address.strip():
            raise ValueError("db_manager_address is empty (Katib sends host:port of its DB manager)")
        logs = [(t.name, self._observation_values(address, t.name, metric))
                for t in request.trials if t.status.condition == _SUCCEEDED]
        result = _native.stopping_rules(algorithm, settings, metric, objective, logs)
        self._log_rules(request.experiment.name, parsed, result)
        return _reply_rules(result)

    def _log_rules(self, experiment: str, parsed: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        if result["trials_ignored"]:
            _log.warning("experiment %s: succeeded trials without a numeric %s value ignored: %s", experiment,
                         parsed["metric_name"], ", ".join(result["trials_ignored"]))
        if result["values_skipped"]:
            _log.warning("experiment %s: %d non-numeric %s values skipped", experiment, result["values_skipped"],
                         parsed["metric_name"])
        rules = [f"{r['name']} {r['comparison']} {r['value_text']} at step {r['start_step']}" for r in result["rules"]]
        _log.info("experiment %s: %s from %d counted trials: %s", experiment, parsed["settings"],
                  result["trials_counted"], "; ".join(rules) or "no rule yet")

    def _observation_values(self, address: str, trial_name: str, metric: str) -> List[str]:
        stub = _pb_grpc.DBManagerStub(self._channel(address))
        try:
            reply = stub.GetObservationLog(_pb.GetObservationLogRequest(trial_name=trial_name, metric_name=metric),
                                           timeout=self._timeout_s)
        except _grpc.RpcError as exc:
            code = exc.code() if callable(getattr(exc, "code", None)) else None
            details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
            raise _Failure(_grpc.StatusCode.UNAVAILABLE,
                           f"Katib DB manager at {address!r}: GetObservationLog for trial {trial_name!r} failed: "
                           f"{code.name if code else 'error'}: {details}") from None
        # The DB manager returns the metric's logs in time order (Katib relies on that too).
        return [log.metric.value for log in reply.observation_log.metric_logs]

    def _channel(self, address: str) -> _grpc.Channel:
        with self._lock:
            channel = self._channels.get(address)
            if channel is None:
                channel = self._channels[address] = _grpc.insecure_channel(address)
            return channel

    def _set_status(self, trial_name: str) -> Any:
        if not trial_name:
            raise ValueError("trial_name is empty")
        setter = self._status_setter()
        try:
            setter.set_early_stopped(trial_name)
        except LookupError as exc:  # KeyError's str() would quote the message
            raise _Failure(_grpc.StatusCode.NOT_FOUND, str(exc.args[0]) if exc.args else str(exc)) from None
        except ValueError:
            raise
        except Exception as exc:
            raise _Failure(_grpc.StatusCode.UNAVAILABLE,
                           f"marking trial {trial_name!r} {_EARLY_STOPPED} failed: {exc}") from None
        return _pb.SetTrialStatusReply()

    def _status_setter(self) -> TrialStatusSetter:
        with self._lock:
            if self._setter is None:
                try:
                    self._setter = KubernetesTrialStatusSetter()
                except Exception as exc:
                    raise _Failure(_grpc.StatusCode.UNAVAILABLE,
                                   f"cannot configure the Kubernetes client: {type(exc).__name__}: {exc}") from None
                self._owns_setter = True
            return self._setter


def _fail(context: Any, code: _grpc.StatusCode, message: str, empty: Callable[[], Any]) -> Any:
    _log.warning("early stopping: %s: %s", code.name, message)
    context.set_code(code)
    context.set_details(message)
    return empty()
