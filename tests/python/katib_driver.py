"""A stand-in for Katib's experiment and suggestion controllers, talking to a Suggestion service over real gRPC.

What it reproduces (facts from kubeflow/katib v1beta1, pkg/controller.v1beta1; no code taken from there):

- the experiment's parameters are written as in the Experiment CRD (``parameterType`` double/int/discrete/
  categorical, ``feasibleSpace`` min/max/step/list/distribution as strings) and converted to
  ``api.v1beta1`` protobuf messages the way the suggestion client does (enum values, strings kept as written);
- each request asks for ``min(parallelTrialCount - running, maxTrialCount - created)`` assignments and carries
  every trial of the experiment (assignments, condition, observation metrics as strings);
- the reply's ``algorithm.algorithm_settings`` are kept in the Suggestion status (same name: value replaced, new
  name: appended) and merged into the experiment's settings of the next request the same way
  (suggestionclient.go updateAlgorithmSettings / appendAlgorithmSettingsFromSuggestion);
- a trial is named ``<experiment>-<8 random characters>`` (k8s.io/apimachinery utilrand.String alphabet), drawn
  from a generator seeded by the experiment name so that runs repeat;
- UNAVAILABLE is an error the controller retries: here after a running trial finished; a reply with fewer
  assignments than asked (without error) means the search is exhausted. That is kubetune's convention: Katib's
  own SyncAssignments rejects every reply whose size differs from current_request_number ("The response
  contains unexpected trials") and requeues, so there a short reply leaves the experiment waiting instead.

Trials are "evaluated" by a Python objective that receives the assignment strings parsed as a training program
would after Katib's trial template substituted them (float for double/discrete, int for int, text otherwise).
Every loop is bounded and every call has a deadline.

The module also starts the real server (``python -m kubetune.katib.server --port 0``) in a subprocess.
"""
from __future__ import annotations

import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import grpc
from kubeflow.katib import katib_api_pb2 as pb
from kubeflow.katib import katib_api_pb2_grpc as pb_grpc

__all__ = [
    "DriverError",
    "KatibDriver",
    "ServerProcess",
    "DriverTrial",
    "experiment_message",
    "merge_settings",
    "parse_value",
    "trial_message",
]

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "python"

ParamValue = Union[float, int, str]
Objective = Callable[[Dict[str, ParamValue]], Optional[float]]

# k8s.io/apimachinery/pkg/util/rand: String(n) draws from "bcdfghjklmnpqrstvwxz2456789" (no vowels, no 0/1/3).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_PARAMETER_TYPES = {"double": pb.DOUBLE, "int": pb.INT, "discrete": pb.DISCRETE, "categorical": pb.CATEGORICAL}
_DISTRIBUTIONS = {"": pb.DISTRIBUTION_UNSPECIFIED, "uniform": pb.UNIFORM, "logUniform": pb.LOG_UNIFORM,
                  "normal": pb.NORMAL, "logNormal": pb.LOG_NORMAL}
_OBJECTIVE_TYPES = {"minimize": pb.MINIMIZE, "maximize": pb.MAXIMIZE}


class DriverError(RuntimeError):
    """The service broke the protocol as Katib's controller sees it (or a loop ran past its bound)."""


# ------------------------------------------------------------------------------------------ messages
def experiment_message(
    name: str,
    parameters: Sequence[Mapping[str, Any]],
    algorithm: str,
    settings: Sequence[Tuple[str, str]] = (),
    *,
    goal: str = "minimize",
    metric: str = "loss",
    parallel: int = 3,
    max_trials: int = 60,
) -> pb.Experiment:
    """An ``api.v1beta1.Experiment`` from CRD-style parameters (``{"name", "parameterType", "feasibleSpace"}``)."""
    exp = pb.Experiment(name=name)
    spec = exp.spec
    for p in parameters:
        fs = p.get("feasibleSpace", {})
        spec.parameter_specs.parameters.add(
            name=p["name"],
            parameter_type=_PARAMETER_TYPES[p["parameterType"]],
            feasible_space=pb.FeasibleSpace(
                min=str(fs.get("min", "")), max=str(fs.get("max", "")), step=str(fs.get("step", "")),
                list=[str(v) for v in fs.get("list", [])],
                distribution=_DISTRIBUTIONS[fs.get("distribution", "")]),
        )
    spec.objective.type = _OBJECTIVE_TYPES[goal]
    spec.objective.objective_metric_name = metric
    spec.algorithm.algorithm_name = algorithm
    spec.algorithm.algorithm_settings.extend(pb.AlgorithmSetting(name=k, value=v) for k, v in settings)
    spec.parallel_trial_count = parallel
    spec.max_trial_count = max_trials
    return exp


def trial_message(
    name: str,
    assignments: Sequence[Tuple[str, str]],
    condition: str = "RUNNING",
    metrics: Sequence[Tuple[str, str]] = (),
) -> pb.Trial:
    """An ``api.v1beta1.Trial``; ``condition`` is a TrialConditionType name, metric values are strings."""
    t = pb.Trial(name=name)
    t.spec.parameter_assignments.assignments.extend(pb.ParameterAssignment(name=k, value=v) for k, v in assignments)
    t.status.condition = pb.TrialStatus.TrialConditionType.Value(condition)
    t.status.observation.metrics.extend(pb.Metric(name=k, value=v) for k, v in metrics)
    return t


def merge_settings(into: List[Tuple[str, str]], new: Sequence[Tuple[str, str]]) -> None:
    """Katib's merge of algorithm settings: an entry of the same name gets the new value, a new name is appended."""
    index = {k: i for i, (k, _) in enumerate(into)}
    for k, v in new:
        if k in index:
            into[index[k]] = (k, v)
        else:
            index[k] = len(into)
            into.append((k, v))


def parse_value(parameter: Mapping[str, Any], text: str) -> ParamValue:
    """An assignment string as the training program reads it after Katib's template substitution."""
    kind = parameter["parameterType"]
    if kind == "int":
        return int(text)
    if kind in ("double", "discrete"):
        return float(text)
    return text


# ------------------------------------------------------------------------------------------ driver
@dataclass
class DriverTrial:
    """One trial as the driver's (fake) Kubernetes API holds it."""

    name: str
    assignments: List[Tuple[str, str]]
    condition: str = "RUNNING"
    metric: Optional[str] = None  # observation text of the objective metric
    value: Optional[float] = None

    @property
    def params(self) -> Dict[str, str]:
        return dict(self.assignments)

    def key(self) -> Tuple[Tuple[str, str], ...]:
        return tuple(sorted(self.assignments))


@dataclass
class KatibDriver:
    """Runs one experiment against ``stub`` (a ``SuggestionStub``) until maxTrialCount or exhaustion.

    ``completion`` says how running trials finish: "batch" = all of them before the next request (synchronous
    batches of ``parallel``), "oldest" = one at a time, oldest first (asynchronous: requests carry running trials).
    ``run(stop_after=n)`` pauses once n trials exist (with those still running) so that the service can be
    replaced (``driver.stub = ...``) before ``run()`` continues.
    """

    stub: Any
    name: str
    parameters: Sequence[Mapping[str, Any]]
    algorithm: str
    objective: Objective
    settings: Sequence[Tuple[str, str]] = ()
    goal: str = "minimize"
    metric: str = "loss"
    parallel: int = 3
    max_trials: int = 60
    completion: str = "batch"
    rpc_timeout: float = 30.0
    max_calls: int = 2000
    trials: List[DriverTrial] = field(default_factory=list)
    batches: List[List[Dict[str, str]]] = field(default_factory=list)  # assignments of each successful reply
    status_settings: List[Tuple[str, str]] = field(default_factory=list)  # the Suggestion status' settings
    exhausted: bool = False
    calls: int = 0
    unavailable: int = 0
    request_sizes: List[int] = field(default_factory=list)
    events: List[Tuple[int, int, str]] = field(default_factory=list)  # (running, requested, outcome) per call

    def __post_init__(self) -> None:
        if self.completion not in ("batch", "oldest"):
            raise ValueError(f"completion must be 'batch' or 'oldest', got {self.completion!r}")
        self._names = random.Random(f"katib-driver/{self.name}")
        self._by_name = {p["name"]: p for p in self.parameters}

    # -------------------------------------------------------------- state
    @property
    def running(self) -> List[DriverTrial]:
        return [t for t in self.trials if t.condition == "RUNNING"]

    @property
    def done(self) -> bool:
        return (self.exhausted or len(self.trials) >= self.max_trials) and not self.running

    def best_value(self) -> float:
        values = [t.value for t in self.trials if t.condition == "SUCCEEDED" and t.value is not None]
        if not values:
            raise DriverError(f"{self.name}: no trial succeeded")
        return min(values) if self.goal == "minimize" else max(values)

    def assignment_sequence(self) -> List[Tuple[Tuple[str, str], ...]]:
        """Every trial's assignments in creation order."""
        return [tuple(t.assignments) for t in self.trials]

    # -------------------------------------------------------------- protocol
    def experiment(self) -> pb.Experiment:
        # appendAlgorithmSettingsFromSuggestion: the status' settings over the spec's (replace or append).
        merged = list(self.settings)
        merge_settings(merged, self.status_settings)
        return experiment_message(self.name, self.parameters, self.algorithm, merged, goal=self.goal,
                                  metric=self.metric, parallel=self.parallel, max_trials=self.max_trials)

    def request(self, count: int) -> pb.GetSuggestionsRequest:
        trials = [trial_message(t.name, t.assignments, t.condition,
                                [(self.metric, t.metric)] if t.metric is not None else [])
                  for t in self.trials]
        return pb.GetSuggestionsRequest(experiment=self.experiment(), trials=trials, current_request_number=count,
                                        total_request_number=len(self.trials) + count)

    def _new_name(self) -> str:
        taken = {t.name for t in self.trials}
        for _ in range(100):
            name = f"{self.name}-{''.join(self._names.choice(_NAME_ALPHABET) for _ in range(8))}"
            if name not in taken:
                return name
        raise DriverError("no free trial name in 100 draws")

    def _finish(self, trial: DriverTrial) -> None:
        params = {k: parse_value(self._by_name[k], v) for k, v in trial.assignments}
        value = self.objective(params)
        if value is None:
            trial.condition = "FAILED"
            return
        trial.condition = "SUCCEEDED"
        trial.metric = repr(float(value))  # the metrics collector stores the printed text
        trial.value = float(value)

    def _finish_some(self) -> None:
        running = self.running
        for t in running if self.completion == "batch" else running[:1]:
            self._finish(t)

    def step(self) -> None:
        """One reconcile: finish trials or ask for suggestions and create trials."""
        count = min(self.parallel - len(self.running), self.max_trials - len(self.trials))
        if self.exhausted or count <= 0:
            if not self.running:
                raise DriverError(f"{self.name}: step() on a finished experiment")
            self._finish_some()
            return
        if self.calls >= self.max_calls:
            raise DriverError(f"{self.name}: more than {self.max_calls} GetSuggestions calls")
        self.calls += 1
        req = self.request(count)
        self.request_sizes.append(req.ByteSize())
        try:
            reply = self.stub.GetSuggestions(req, timeout=self.rpc_timeout)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            self.unavailable += 1
            self.events.append((len(self.running), count, "UNAVAILABLE"))
            if not self.running:
                raise DriverError(f"{self.name}: UNAVAILABLE with no running trial: {exc.details()}") from exc
            self._finish_some()  # Katib retries on its next reconcile, after a trial finished
            return
        got = [[(a.name, a.value) for a in pa.assignments] for pa in reply.parameter_assignments]
        if len(got) > count:
            raise DriverError(f"{self.name}: {len(got)} assignments for a request of {count}")
        if reply.HasField("algorithm"):
            merge_settings(self.status_settings, [(s.name, s.value) for s in reply.algorithm.algorithm_settings])
        self.batches.append([dict(a) for a in got])
        self.events.append((len(self.running), count, str(len(got))))
        for a in got:
            self.trials.append(DriverTrial(self._new_name(), a))
        if len(got) < count:
            self.exhausted = True

    def run(self, stop_after: Optional[int] = None, max_steps: int = 10000) -> "KatibDriver":
        """Reconcile until done (or until ``stop_after`` trials exist); bounded by ``max_steps``."""
        for _ in range(max_steps):
            if self.done or (stop_after is not None and len(self.trials) >= stop_after):
                return self
            self.step()
        raise DriverError(f"{self.name}: not done after {max_steps} steps")


# ------------------------------------------------------------------------------------------ server process
class ServerProcess:
    """``python -m kubetune.katib.server --port 0`` on 127.0.0.1 in a subprocess; ``close()`` always ends it."""

    def __init__(self, *args: str, ready_timeout: float = 60.0) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(PYTHON_DIR) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self._log = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kubetune.katib.server", "--port", "0", "--host", "127.0.0.1",
             "--log-level", "WARNING", *args],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log)
        self.port = self._read_port(ready_timeout)
        self.address = f"127.0.0.1:{self.port}"
        self.channel: Optional[grpc.Channel] = None

    def _read_port(self, timeout: float) -> int:
        lines: List[str] = []
        assert self.proc.stdout is not None
        reader = threading.Thread(target=lambda: lines.append(self.proc.stdout.readline().decode()),  # type: ignore
                                  daemon=True)
        reader.start()
        reader.join(timeout)
        prefix = "kubetune-katib listening on port "
        if not lines or not lines[0].startswith(prefix):
            self.close()
            raise DriverError(f"server not ready in {timeout} s (stdout {lines!r}); stderr:\n{self.stderr()}")
        return int(lines[0][len(prefix):])

    def connect(self, timeout: float = 30.0, **options: Any) -> grpc.Channel:
        """A channel to the server, ready (or DriverError after ``timeout``); closed by ``close()``."""
        self.channel = grpc.insecure_channel(self.address, options=list(options.items()))
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError as exc:
            raise DriverError(f"no connection to {self.address} in {timeout} s") from exc
        return self.channel

    def suggestion_stub(self) -> Any:
        return pb_grpc.SuggestionStub(self.channel or self.connect())

    def stderr(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()
