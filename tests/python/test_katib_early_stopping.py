"""Katib's EarlyStopping service (kubetune.katib.early_stopping) against real stand-ins.

The service is driven through grpcio-testing (``grpc_testing.server_from_dictionary`` with Katib's service
descriptor, as Katib tests its own services) and once through a real gRPC server. Observation logs come from a
real gRPC DB manager stand-in on 127.0.0.1 (``DBManagerServicer.GetObservationLog`` over a dict), so the
service's own client path runs. The Kubernetes side runs the official ``kubernetes`` client against a small HTTP
stand-in of the API server on 127.0.0.1. Every expected threshold is worked out by hand in the comments.
"""
from __future__ import annotations

import datetime
import http.server
import json
import logging
import socket
import threading
from concurrent import futures
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pytest

grpc = pytest.importorskip("grpc")
grpc_testing = pytest.importorskip("grpc_testing")
pb = pytest.importorskip("kubeflow.katib.katib_api_pb2")
pb_grpc = pytest.importorskip("kubeflow.katib.katib_api_pb2_grpc")
kubernetes = pytest.importorskip("kubernetes")

from kubetune.katib.early_stopping import (  # noqa: E402
    EarlyStoppingService,
    KubernetesTrialStatusSetter,
    resolve_namespace,
)

SERVICE = pb.DESCRIPTOR.services_by_name["EarlyStopping"]
SUCCEEDED = pb.TrialStatus.TrialConditionType.SUCCEEDED
RUNNING = pb.TrialStatus.TrialConditionType.RUNNING
FAILED = pb.TrialStatus.TrialConditionType.FAILED
EARLYSTOPPED = pb.TrialStatus.TrialConditionType.EARLYSTOPPED
RPC_TIMEOUT_S = 10

# Objective "loss" logs. First 4 values (start_step 4, Katib's default): t1 (1+2+3+6)/4 = 3, t2 2, t3 10, so
# Katib's rule gives the mean 15/3 = 5 and the true median gives 3. First 2 (start_step 2): t1 1.5, t2 2, t3 10:
# mean 13.5/3 = 4.5, median 2; values at step 2: t1 2, t2 2, t3 10.
LOSS_LOGS: Dict[str, List[str]] = {
    "t1": ["1", "2", "3", "6", "100"],
    "t2": ["2", "2", "2", "2"],
    "t3": ["10", "10", "10", "10"],
    "t4-unavailable": ["unavailable"],
    "running": ["0", "0", "0", "0"],
    "failed": ["0", "0", "0", "0"],
    "stopped": ["0", "0", "0", "0"],
}


# ------------------------------------------------------------------------------------------ DB manager stand-in
class StandInDBManager(pb_grpc.DBManagerServicer):
    """Katib's DB manager over a dict {trial: {metric: [values]}}; records every request."""

    def __init__(self) -> None:
        self.logs: Dict[str, Dict[str, List[str]]] = {}
        self.requests: List[Tuple[str, str]] = []
        self.fail_for: Dict[str, grpc.StatusCode] = {}
        self.lock = threading.Lock()

    def GetObservationLog(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self.lock:
            self.requests.append((request.trial_name, request.metric_name))
            code = self.fail_for.get(request.trial_name)
            values = list(self.logs.get(request.trial_name, {}).get(request.metric_name, []))
        if code is not None:
            context.abort(code, f"stand-in failure for {request.trial_name}")
        logs = [pb.MetricLog(time_stamp=f"2024-01-01T00:00:{i:02d}Z", metric=pb.Metric(name=request.metric_name,
                                                                                       value=v))
                for i, v in enumerate(values)]
        return pb.GetObservationLogReply(observation_log=pb.ObservationLog(metric_logs=logs))


@pytest.fixture(scope="module")
def db_server() -> Iterator[Tuple[StandInDBManager, str]]:
    servicer = StandInDBManager()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_DBManagerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield servicer, f"127.0.0.1:{port}"
    finally:
        server.stop(None).wait(5)


@pytest.fixture()
def db(db_server: Tuple[StandInDBManager, str]) -> Tuple[StandInDBManager, str]:
    servicer, address = db_server
    with servicer.lock:
        servicer.logs = {name: {"loss": list(v), "accuracy": list(v)} for name, v in LOSS_LOGS.items()}
        servicer.logs["t1"]["other"] = ["-1000"] * 5
        servicer.requests.clear()
        servicer.fail_for.clear()
    return servicer, address


class FakeSetter:
    def __init__(self, error: Optional[Exception] = None) -> None:
        self.names: List[str] = []
        self.error = error

    def set_early_stopped(self, trial_name: str) -> None:
        self.names.append(trial_name)
        if self.error is not None:
            raise self.error


@pytest.fixture()
def setter() -> FakeSetter:
    return FakeSetter()


@pytest.fixture()
def service(setter: FakeSetter) -> Iterator[EarlyStoppingService]:
    with EarlyStoppingService(trial_status_setter=setter, db_manager_timeout_s=5.0) as s:
        yield s


@pytest.fixture()
def test_server(service: EarlyStoppingService) -> Any:
    return grpc_testing.server_from_dictionary({SERVICE: service}, grpc_testing.strict_real_time())


# ------------------------------------------------------------------------------------------ request helpers
def experiment(settings: Sequence[Tuple[str, str]] = (), *, algorithm: str = "medianstop",
               objective: int = pb.MINIMIZE, metric: str = "loss") -> Any:
    return pb.Experiment(name="exp", spec=pb.ExperimentSpec(
        objective=pb.ObjectiveSpec(type=objective, objective_metric_name=metric),
        early_stopping=pb.EarlyStoppingSpec(
            algorithm_name=algorithm,
            algorithm_settings=[pb.EarlyStoppingSetting(name=n, value=v) for n, v in settings])))


def trials(*succeeded: str, others: bool = True) -> List[Any]:
    out = [pb.Trial(name=n, status=pb.TrialStatus(condition=SUCCEEDED)) for n in succeeded]
    if others:  # have logs in the DB but must not count
        out += [pb.Trial(name="running", status=pb.TrialStatus(condition=RUNNING)),
                pb.Trial(name="failed", status=pb.TrialStatus(condition=FAILED)),
                pb.Trial(name="stopped", status=pb.TrialStatus(condition=EARLYSTOPPED))]
    return out


def invoke(test_server: Any, method: str, request: Any) -> Tuple[Any, Any, str]:
    rpc = test_server.invoke_unary_unary(method_descriptor=SERVICE.methods_by_name[method],
                                         invocation_metadata={}, request=request, timeout=RPC_TIMEOUT_S)
    response, _, code, details = rpc.termination()
    return response, code, details


def rules(test_server: Any, exp: Any, trial_list: List[Any], address: str) -> Tuple[List[Any], Any, str]:
    request = pb.GetEarlyStoppingRulesRequest(experiment=exp, trials=trial_list, db_manager_address=address)
    response, code, details = invoke(test_server, "GetEarlyStoppingRules", request)
    return list(response.early_stopping_rules), code, details


def validate(test_server: Any, algorithm: str, settings: Sequence[Tuple[str, str]]) -> Tuple[Any, str]:
    spec = pb.EarlyStoppingSpec(algorithm_name=algorithm,
                                algorithm_settings=[pb.EarlyStoppingSetting(name=n, value=v) for n, v in settings])
    _, code, details = invoke(test_server, "ValidateEarlyStoppingSettings",
                              pb.ValidateEarlyStoppingSettingsRequest(early_stopping=spec))
    return code, details


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_rule(result: Tuple[List[Any], Any, str]) -> Any:
    got, code, details = result
    assert code == grpc.StatusCode.OK, details
    assert len(got) == 1, got
    return got[0]


# ------------------------------------------------------------------------------------------ GetEarlyStoppingRules
def test_no_rule_with_fewer_than_min_trials_required(test_server: Any, db: Tuple[StandInDBManager, str]) -> None:
    got, code, _ = rules(test_server, experiment(), trials("t1", "t2"), db[1])
    assert code == grpc.StatusCode.OK and got == []
    got, code, _ = rules(test_server, experiment(), [], db[1])
    assert code == grpc.StatusCode.OK and got == []
    # min_trials_required 2: mean of t1 3 and t2 2 = 2.5
    r = one_rule(rules(test_server, experiment([("min_trials_required", "2")]), trials("t1", "t2"), db[1]))
    assert r.value == "2.5"


def test_katib_rule_is_the_mean_of_succeeded_trials(test_server: Any, db: Tuple[StandInDBManager, str]) -> None:
    r = one_rule(rules(test_server, experiment(), trials("t1", "t2", "t3"), db[1]))
    assert (r.name, r.value, r.comparison, r.start_step) == ("loss", "5", pb.GREATER, 4)
    # Only the succeeded trials' objective logs were read, through the real gRPC client.
    assert sorted(db[0].requests) == [("t1", "loss"), ("t2", "loss"), ("t3", "loss")]


def test_median_rule_and_start_step(test_server: Any, db: Tuple[StandInDBManager, str]) -> None:
    three = trials("t1", "t2", "t3")
    assert one_rule(rules(test_server, experiment([("rule", "median")]), three, db[1])).value == "3"
    r = one_rule(rules(test_server, experiment([("rule", "median"), ("start_step", "2")]), three, db[1]))
    assert (r.value, r.start_step) == ("2", 2)
    r = one_rule(rules(test_server, experiment([("rule", "katib"), ("start_step", "2")]), three, db[1]))
    assert (r.value, r.start_step) == ("4.5", 2)


def test_maximize_compares_less(test_server: Any, db: Tuple[StandInDBManager, str]) -> None:
    exp = experiment(objective=pb.MAXIMIZE, metric="accuracy")
    r = one_rule(rules(test_server, exp, trials("t1", "t2", "t3"), db[1]))
    assert (r.name, r.value, r.comparison, r.start_step) == ("accuracy", "5", pb.LESS, 4)
    exp = experiment([("rule", "median")], objective=pb.MAXIMIZE, metric="accuracy")
    assert one_rule(rules(test_server, exp, trials("t1", "t2", "t3"), db[1])).value == "3"


def test_percentile_algorithm(test_server: Any, db: Tuple[StandInDBManager, str]) -> None:
    three = trials("t1", "t2", "t3")
    # Values at step 2 sorted: 2, 2, 10. Minimize, q = 75: position 1.5 -> 2 + 0.5 * 8 = 6.
    exp = experiment([("percentile", "75"), ("start_step", "2")], algorithm="percentile")
    r = one_rule(rules(test_server, exp, three, db[1]))
    assert (r.value, r.comparison, r.start_step) == ("6", pb.GREATER, 2)
    # Maximize, q = 25 in lower-is-better orientation is the 75th percentile of the raw values: 6 again.
    exp = experiment([("percentile", "25"), ("start_step", "2")], algorithm="percentile", objective=pb.MAXIMIZE,
                     metric="accuracy")
    r = one_rule(rules(test_server, exp, three, db[1]))
    assert (r.value, r.comparison) == ("6", pb.LESS)


def test_answer_depends_only_on_the_request(test_server: Any, db: Tuple[StandInDBManager, str]) -> None:
    three, two = trials("t1", "t2", "t3"), trials("t1", "t2")
    assert one_rule(rules(test_server, experiment(), three, db[1])).value == "5"
    # Katib's service would remember t3's average and still answer; a replayed smaller request answers none.
    got, code, _ = rules(test_server, experiment(), two, db[1])
    assert code == grpc.StatusCode.OK and got == []
    assert one_rule(rules(test_server, experiment(), list(reversed(three)), db[1])).value == "5"


def test_unavailable_metric_values_are_skipped(test_server: Any, db: Tuple[StandInDBManager, str],
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kubetune.katib")
    got, code, _ = rules(test_server, experiment(), trials("t1", "t2", "t4-unavailable"), db[1])
    assert code == grpc.StatusCode.OK and got == []  # t4 does not count: 2 < 3
    assert "t4-unavailable" in caplog.text
    r = one_rule(rules(test_server, experiment(), trials("t1", "t2", "t3", "t4-unavailable"), db[1]))
    assert r.value == "5"
    # A succeeded trial the DB knows nothing about is ignored the same way.
    r = one_rule(rules(test_server, experiment(), trials("t1", "t2", "t3", "never-logged"), db[1]))
    assert r.value == "5"


def test_bad_rules_requests_are_invalid_argument(test_server: Any, db: Tuple[StandInDBManager, str]) -> None:
    cases = [
        (experiment([("start_step", "0")]), "start_step", "'0'"),
        (experiment([("rule", "mean")]), "rule", "'mean'"),
        (experiment(algorithm="nope"), "algorithm", "'nope'"),
        (experiment(objective=pb.UNKNOWN), "objective", "UNKNOWN"),
        (experiment(metric=""), "objective_metric_name", ""),
    ]
    for exp, *parts in cases:
        got, code, details = rules(test_server, exp, trials("t1", "t2", "t3"), db[1])
        assert code == grpc.StatusCode.INVALID_ARGUMENT, details
        assert got == [] and all(p in details for p in parts), details
    assert db[0].requests == []  # rejected before reading any log
    _, code, details = rules(test_server, experiment(), trials("t1"), "")
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "db_manager_address" in details
    _, code, details = rules(test_server, experiment(), trials("t1", "t1", "t2"), db[1])
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "'t1'" in details


def test_unreachable_db_manager_is_unavailable(test_server: Any) -> None:
    address = f"127.0.0.1:{closed_port()}"
    got, code, details = rules(test_server, experiment(), trials("t1", "t2", "t3"), address)
    assert code == grpc.StatusCode.UNAVAILABLE
    assert address in details and got == []


def test_failing_db_manager_is_unavailable(test_server: Any, db: Tuple[StandInDBManager, str]) -> None:
    db[0].fail_for["t2"] = grpc.StatusCode.INTERNAL
    got, code, details = rules(test_server, experiment(), trials("t1", "t2", "t3"), db[1])
    assert code == grpc.StatusCode.UNAVAILABLE
    assert db[1] in details and "'t2'" in details and "INTERNAL" in details
    # The service keeps working once the DB manager does.
    db[0].fail_for.clear()
    assert one_rule(rules(test_server, experiment(), trials("t1", "t2", "t3"), db[1])).value == "5"


def test_channels_are_cached_and_closed(db: Tuple[StandInDBManager, str]) -> None:
    service = EarlyStoppingService(trial_status_setter=FakeSetter())
    server = grpc_testing.server_from_dictionary({SERVICE: service}, grpc_testing.strict_real_time())
    for _ in range(2):
        one_rule(rules(server, experiment(), trials("t1", "t2", "t3"), db[1]))
    assert list(service._channels) == [db[1]]
    service.close()
    assert service._channels == {}
    assert one_rule(rules(server, experiment(), trials("t1", "t2", "t3"), db[1])).value == "5"  # reopens
    service.close()


def test_constructor_rejects_bad_timeout() -> None:
    for bad in (0, -1.0, float("nan"), "10", True):
        with pytest.raises(ValueError, match="db_manager_timeout_s"):
            EarlyStoppingService(db_manager_timeout_s=bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ ValidateEarlyStoppingSettings
@pytest.mark.parametrize("algorithm, settings", [
    ("medianstop", []),
    ("medianstop", [("min_trials_required", "2"), ("start_step", "5")]),
    ("medianstop", [("min_trials_required", "1"), ("start_step", "1"), ("rule", "median")]),
    ("medianstop", [("rule", "katib")]),
    ("percentile", [("percentile", "50"), ("min_trials_required", "4"), ("start_step", "3")]),
    ("percentile", [("percentile", "0")]),
    ("percentile", [("percentile", "100")]),
])
def test_validate_valid_settings(test_server: Any, algorithm: str, settings: List[Tuple[str, str]]) -> None:
    assert validate(test_server, algorithm, settings) == (grpc.StatusCode.OK, "")


@pytest.mark.parametrize("algorithm, settings, parts", [
    ("unknown", [], ["unknown early stopping algorithm", "'unknown'", "medianstop"]),
    ("", [], ["algorithm name ''"]),
    ("medianstop", [("unknown_conf", "100")], ["unknown setting", "'unknown_conf'", "'100'"]),
    ("medianstop", [("percentile", "50")], ["unknown setting", "'percentile'"]),
    ("percentile", [("rule", "median")], ["unknown setting", "'rule'"]),
    ("medianstop", [("min_trials_required", "0")], ["'min_trials_required'", "'0'"]),
    ("medianstop", [("min_trials_required", "-2")], ["'min_trials_required'", "'-2'"]),
    ("medianstop", [("min_trials_required", "three")], ["'min_trials_required'", "three"]),
    ("medianstop", [("min_trials_required", "2.5")], ["'min_trials_required'", "2.5"]),
    ("medianstop", [("min_trials_required", "")], ["'min_trials_required'", "''"]),
    ("medianstop", [("start_step", "0")], ["'start_step'", "'0'"]),
    ("medianstop", [("start_step", "4x")], ["'start_step'", "4x"]),
    ("percentile", [("start_step", "99999999999")], ["'start_step'", "'99999999999'"]),
    ("medianstop", [("rule", "mean")], ["'rule'", "'mean'"]),
    ("medianstop", [("rule", "Median")], ["'rule'", "'Median'"]),
    ("percentile", [("percentile", "101")], ["'percentile'", "'101'"]),
    ("percentile", [("percentile", "-1")], ["'percentile'", "'-1'"]),
    ("percentile", [("percentile", "half")], ["'percentile'", "half"]),
    ("medianstop", [("start_step", "3"), ("start_step", "4")], ["'start_step'", "more than once"]),
])
def test_validate_invalid_settings(test_server: Any, algorithm: str, settings: List[Tuple[str, str]],
                                   parts: List[str]) -> None:
    code, details = validate(test_server, algorithm, settings)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    for p in parts:
        assert p in details, details


# ------------------------------------------------------------------------------------------ SetTrialStatus
def test_set_trial_status_calls_the_setter(test_server: Any, setter: FakeSetter) -> None:
    _, code, _ = invoke(test_server, "SetTrialStatus", pb.SetTrialStatusRequest(trial_name="exp-abc123"))
    assert code == grpc.StatusCode.OK and setter.names == ["exp-abc123"]
    _, code, details = invoke(test_server, "SetTrialStatus", pb.SetTrialStatusRequest(trial_name=""))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "trial_name" in details
    assert setter.names == ["exp-abc123"]


@pytest.mark.parametrize("error, code", [
    (LookupError("trial ns/x: not found (HTTP 404)"), grpc.StatusCode.NOT_FOUND),
    (RuntimeError("Kubernetes API: HTTP 500"), grpc.StatusCode.UNAVAILABLE),
    (ValueError("bad name"), grpc.StatusCode.INVALID_ARGUMENT),
])
def test_set_trial_status_errors(error: Exception, code: Any) -> None:
    failing = FakeSetter(error)
    server = grpc_testing.server_from_dictionary({SERVICE: EarlyStoppingService(trial_status_setter=failing)},
                                                 grpc_testing.strict_real_time())
    _, got, details = invoke(server, "SetTrialStatus", pb.SetTrialStatusRequest(trial_name="x"))
    assert got == code and str(error) in details and failing.names == ["x"]


# ------------------------------------------------------------------------------------------ a real gRPC server
def test_through_a_real_grpc_server(service: EarlyStoppingService, setter: FakeSetter,
                                    db: Tuple[StandInDBManager, str]) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_EarlyStoppingServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.EarlyStoppingStub(channel)
            reply = stub.GetEarlyStoppingRules(pb.GetEarlyStoppingRulesRequest(
                experiment=experiment([("rule", "median")]), trials=trials("t1", "t2", "t3"),
                db_manager_address=db[1]), timeout=RPC_TIMEOUT_S)
            assert [(r.name, r.value, r.comparison) for r in reply.early_stopping_rules] == [("loss", "3", pb.GREATER)]
            with pytest.raises(grpc.RpcError) as err:
                stub.ValidateEarlyStoppingSettings(pb.ValidateEarlyStoppingSettingsRequest(
                    early_stopping=pb.EarlyStoppingSpec(algorithm_name="medianstop", algorithm_settings=[
                        pb.EarlyStoppingSetting(name="start_step", value="0")])), timeout=RPC_TIMEOUT_S)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "'start_step'" in err.value.details()
            stub.SetTrialStatus(pb.SetTrialStatusRequest(trial_name="t9"), timeout=RPC_TIMEOUT_S)
            assert setter.names == ["t9"]
    finally:
        server.stop(None).wait(5)


# ------------------------------------------------------------------------------------------ Kubernetes API stand-in
class StandInKubernetes:
    """The two Trial endpoints of the Kubernetes API over a dict; records (method, path, headers, body)."""

    PREFIX = "/apis/kubeflow.org/v1beta1/namespaces/"

    def __init__(self) -> None:
        self.trials: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self.requests: List[Tuple[str, str, Dict[str, str], Any]] = []
        self.patch_codes: List[int] = []  # statuses to answer the next PATCHes with, before succeeding
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802
                owner.handle(self, "GET")

            def do_PATCH(self) -> None:  # noqa: N802
                owner.handle(self, "PATCH")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.timeout = 5
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.host = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def handle(self, h: http.server.BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = json.loads(h.rfile.read(length)) if length else None
        self.requests.append((method, h.path, {k.lower(): v for k, v in h.headers.items()}, body))
        path = h.path.split("?")[0]
        parts = path[len(self.PREFIX):].split("/") if path.startswith(self.PREFIX) else []
        if len(parts) < 3 or parts[1] != "trials" or (parts[0], parts[2]) not in self.trials:
            return self.reply(h, 404, {"kind": "Status", "code": 404, "reason": "NotFound"})
        trial = self.trials[(parts[0], parts[2])]
        if method == "GET":
            return self.reply(h, 200, trial)
        if path.endswith("/status") and self.patch_codes:
            return self.reply(h, self.patch_codes.pop(0), {"kind": "Status", "reason": "Conflict"})
        trial["status"] = body["status"]
        trial["metadata"]["resourceVersion"] = str(int(trial["metadata"]["resourceVersion"]) + 1)
        return self.reply(h, 200, trial)

    @staticmethod
    def reply(h: http.server.BaseHTTPRequestHandler, code: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)


RUNNING_CONDITION = {"type": "Running", "status": "True", "reason": "TrialRunning", "message": "Trial is running",
                     "lastUpdateTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"}
NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)


@pytest.fixture()
def kube() -> Iterator[StandInKubernetes]:
    k = StandInKubernetes()
    k.trials[("ns1", "t1")] = {"apiVersion": "kubeflow.org/v1beta1", "kind": "Trial",
                               "metadata": {"name": "t1", "namespace": "ns1", "resourceVersion": "42"},
                               "status": {"conditions": [dict(RUNNING_CONDITION)]}}
    try:
        yield k
    finally:
        k.stop()


@pytest.fixture()
def api_client(kube: StandInKubernetes) -> Iterator[Any]:
    configuration = kubernetes.client.Configuration()
    configuration.host = kube.host
    client = kubernetes.client.ApiClient(configuration)
    try:
        yield client
    finally:
        client.close()


def k8s_setter(api_client: Any) -> KubernetesTrialStatusSetter:
    return KubernetesTrialStatusSetter("ns1", api_client=api_client, timeout_s=5, clock=lambda: NOW)


EXPECTED_CONDITION = {"type": "EarlyStopped", "status": "True", "reason": "TrialEarlyStopped",
                      "message": "Trial is early stopped", "lastUpdateTime": "2024-05-06T07:08:09Z",
                      "lastTransitionTime": "2024-05-06T07:08:09Z"}


def test_kubernetes_setter_request_shape(kube: StandInKubernetes, api_client: Any) -> None:
    k8s_setter(api_client).set_early_stopped("t1")
    (get_m, get_path, _, _), (patch_m, patch_path, headers, body) = kube.requests
    assert (get_m, get_path) == ("GET", "/apis/kubeflow.org/v1beta1/namespaces/ns1/trials/t1")
    assert (patch_m, patch_path) == ("PATCH", "/apis/kubeflow.org/v1beta1/namespaces/ns1/trials/t1/status")
    assert headers["content-type"] == "application/merge-patch+json"
    assert body == {"metadata": {"resourceVersion": "42"},
                    "status": {"conditions": [RUNNING_CONDITION, EXPECTED_CONDITION]}}
    assert kube.trials[("ns1", "t1")]["status"]["conditions"][-1] == EXPECTED_CONDITION


def test_kubernetes_setter_retries_conflicts_and_is_idempotent(kube: StandInKubernetes, api_client: Any) -> None:
    kube.patch_codes = [409]
    k8s_setter(api_client).set_early_stopped("t1")
    assert [m for m, *_ in kube.requests] == ["GET", "PATCH", "GET", "PATCH"]
    kube.requests.clear()
    k8s_setter(api_client).set_early_stopped("t1")  # already EarlyStopped: read only
    assert [m for m, *_ in kube.requests] == ["GET"]
    assert len(kube.trials[("ns1", "t1")]["status"]["conditions"]) == 2
    kube.trials[("ns1", "t1")]["status"]["conditions"].pop()
    kube.patch_codes = [409, 409]
    setter = KubernetesTrialStatusSetter("ns1", api_client=api_client, timeout_s=5, conflict_retries=1)
    with pytest.raises(RuntimeError, match="gave up after 2"):
        setter.set_early_stopped("t1")
    kube.patch_codes = [500]
    with pytest.raises(RuntimeError, match="HTTP 500"):
        setter.set_early_stopped("t1")


def test_kubernetes_setter_errors_through_the_service(kube: StandInKubernetes, api_client: Any) -> None:
    server = grpc_testing.server_from_dictionary(
        {SERVICE: EarlyStoppingService(trial_status_setter=k8s_setter(api_client))}, grpc_testing.strict_real_time())
    _, code, details = invoke(server, "SetTrialStatus", pb.SetTrialStatusRequest(trial_name="missing"))
    assert code == grpc.StatusCode.NOT_FOUND and "ns1/missing" in details
    _, code, _ = invoke(server, "SetTrialStatus", pb.SetTrialStatusRequest(trial_name="t1"))
    assert code == grpc.StatusCode.OK
    assert kube.trials[("ns1", "t1")]["status"]["conditions"][-1] == EXPECTED_CONDITION


def test_kubernetes_api_unreachable_is_unavailable() -> None:
    configuration = kubernetes.client.Configuration()
    configuration.host = f"http://127.0.0.1:{closed_port()}"
    configuration.retries = False
    client = kubernetes.client.ApiClient(configuration)
    try:
        server = grpc_testing.server_from_dictionary(
            {SERVICE: EarlyStoppingService(trial_status_setter=k8s_setter(client))}, grpc_testing.strict_real_time())
        _, code, details = invoke(server, "SetTrialStatus", pb.SetTrialStatusRequest(trial_name="t1"))
        assert code == grpc.StatusCode.UNAVAILABLE and "'t1'" in details
    finally:
        client.close()


def test_default_setter_from_kubeconfig_and_namespace_env(kube: StandInKubernetes, tmp_path: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "stand-in",
        "clusters": [{"name": "stand-in", "cluster": {"server": kube.host}}],
        "users": [{"name": "u", "user": {"token": "test-token"}}],
        "contexts": [{"name": "stand-in", "context": {"cluster": "stand-in", "user": "u"}}],
    }))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # not in a pod: in-cluster config fails
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KUBETUNE_NAMESPACE", "ns1")
    with EarlyStoppingService() as service:
        server = grpc_testing.server_from_dictionary({SERVICE: service}, grpc_testing.strict_real_time())
        _, code, details = invoke(server, "SetTrialStatus", pb.SetTrialStatusRequest(trial_name="t1"))
        assert code == grpc.StatusCode.OK, details
    assert kube.requests[0][2]["authorization"] == "Bearer test-token"
    assert kube.trials[("ns1", "t1")]["status"]["conditions"][-1]["type"] == "EarlyStopped"


def test_no_kubernetes_configuration_is_unavailable(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    server = grpc_testing.server_from_dictionary({SERVICE: EarlyStoppingService()}, grpc_testing.strict_real_time())
    _, code, details = invoke(server, "SetTrialStatus", pb.SetTrialStatusRequest(trial_name="t1"))
    assert code == grpc.StatusCode.UNAVAILABLE and "Kubernetes client" in details


def test_resolve_namespace(tmp_path: Any) -> None:
    sa = tmp_path / "namespace"
    sa.write_text("from-file\n")
    assert resolve_namespace("arg", environ={"KUBETUNE_NAMESPACE": "env"}, service_account_file=str(sa)) == "arg"
    assert resolve_namespace(environ={"KUBETUNE_NAMESPACE": "env"}, service_account_file=str(sa)) == "env"
    assert resolve_namespace(environ={}, service_account_file=str(sa)) == "from-file"
    assert resolve_namespace(environ={}, service_account_file=str(tmp_path / "absent")) == "default"
    with pytest.raises(ValueError, match="namespace"):
        resolve_namespace("  ")
