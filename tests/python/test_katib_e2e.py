"""End-to-end tests of the Katib Suggestion service (``python -m kubetune.katib.server``) over real gRPC.

The server runs as a subprocess on 127.0.0.1; ``katib_driver.KatibDriver`` plays Katib's controllers (requests
of ``min(parallel - running, max - created)``, every trial in every request, algorithm settings merged back from
each reply, UNAVAILABLE retried once a running trial finished). Budgets (chosen for time on 2 busy cores):
maxTrialCount 60 (bayesianoptimization: 30, for the time of the direct GP runs), 15 experiments per (space,
algorithm) for the comparison with the searcher used directly, 30 trials for the restart and concurrency checks,
Hyperband r_l=9 (22 trials) / r_l=27 (60 of its 69 trials), eta=3.
"""
from __future__ import annotations

import collections
import math
import signal
import statistics
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pytest

pytest.importorskip("kubeflow.katib")
pytest.importorskip("grpc")
health_pb2 = pytest.importorskip("grpc_health.v1.health_pb2")
health_pb2_grpc = pytest.importorskip("grpc_health.v1.health_pb2_grpc")

import grpc  # noqa: E402
from kubeflow.katib import katib_api_pb2 as pb  # noqa: E402
from kubeflow.katib import katib_api_pb2_grpc as pb_grpc  # noqa: E402

import kubetune as kt  # noqa: E402
from katib_driver import (  # noqa: E402
    KatibDriver,
    ServerProcess,
    experiment_message,
    merge_settings,
    parse_value,
    trial_message,
)

RPC_TIMEOUT = 30.0
THREAD_TIMEOUT = 120.0

# ------------------------------------------------------------------------------------------ spaces and objectives
BRANIN = [
    {"name": "x1", "parameterType": "double", "feasibleSpace": {"min": "-5", "max": "10"}},
    {"name": "x2", "parameterType": "double", "feasibleSpace": {"min": "0", "max": "15"}},
]
BRANIN_GRID = [  # same box, Katib grid steps: 7 x 7 = 49 points
    {"name": "x1", "parameterType": "double", "feasibleSpace": {"min": "-5", "max": "10", "step": "2.5"}},
    {"name": "x2", "parameterType": "double", "feasibleSpace": {"min": "0", "max": "15", "step": "2.5"}},
]
BRANIN_OPTIMUM = 0.397887


def branin(p: Mapping[str, Any]) -> float:
    x1, x2 = p["x1"], p["x2"]
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


MIXED = [
    {"name": "lr", "parameterType": "double",
     "feasibleSpace": {"min": "0.0001", "max": "1", "distribution": "logUniform"}},
    {"name": "layers", "parameterType": "int", "feasibleSpace": {"min": "1", "max": "8"}},
    {"name": "batch", "parameterType": "discrete", "feasibleSpace": {"list": ["16", "32", "64", "128", "256"]}},
    {"name": "optimizer", "parameterType": "categorical", "feasibleSpace": {"list": ["sgd", "adam", "rmsprop"]}},
]
MIXED_GRID = [  # log lr on 3 points (setting default_points=3) x 3 x 3 x 2 = 54 points, the optimum among them
    MIXED[0],
    {"name": "layers", "parameterType": "int", "feasibleSpace": {"min": "2", "max": "4"}},
    {"name": "batch", "parameterType": "discrete", "feasibleSpace": {"list": ["32", "64", "128"]}},
    {"name": "optimizer", "parameterType": "categorical", "feasibleSpace": {"list": ["sgd", "adam"]}},
]
MIXED_OPTIMUM = 0.0  # lr = 1e-2, layers = 3, batch = 64, optimizer = adam
_OPTIMIZER_PENALTY = {"adam": 0.0, "sgd": 0.5, "rmsprop": 1.0}


def mixed(p: Mapping[str, Any]) -> float:
    return ((math.log10(p["lr"]) + 2) ** 2 + 0.25 * (p["layers"] - 3) ** 2
            + 0.5 * (math.log2(p["batch"]) - 6) ** 2 + _OPTIMIZER_PENALTY[p["optimizer"]])


def hyperband_space(r_l: int) -> List[Dict[str, Any]]:
    return [
        {"name": "lr", "parameterType": "double",
         "feasibleSpace": {"min": "0.001", "max": "1", "distribution": "logUniform"}},
        {"name": "epochs", "parameterType": "int", "feasibleSpace": {"min": "1", "max": str(r_l)}},
    ]


def learning_curve(p: Mapping[str, Any]) -> float:
    """Loss after ``epochs``: the ranking within a rung is the ranking of lr."""
    return (math.log10(p["lr"]) + 2) ** 2 + 1.0 / p["epochs"]


def hyperband_settings(r_l: int, **extra: str) -> List[Tuple[str, str]]:
    return [("r_l", str(r_l)), ("eta", "3"), ("resource_name", "epochs"), *extra.items()]


SPACES: Dict[str, Tuple[List[Dict[str, Any]], Callable[[Mapping[str, Any]], float], float]] = {
    "branin": (BRANIN, branin, BRANIN_OPTIMUM),
    "mixed": (MIXED, mixed, MIXED_OPTIMUM),
}
ALGORITHMS = ["tpe", "multivariate-tpe", "bayesianoptimization", "random", "sobol"]
N_RUNS = 15
MAX_TRIALS = 60
# GP experiments get maxTrialCount 30: the direct GP Study costs up to ~0.8 s per 60-trial run on a busy core
# (x 15 runs x 2 spaces), and both sides reach the optimum within 30 trials anyway.
BUDGET = {"bayesianoptimization": 30}


def searcher_config(algorithm: str) -> Dict[str, Any]:
    """The kubetune searcher the service builds for a Katib algorithm with no settings (src/core/katib.cpp:
    Katib's ``tpe`` is hyperopt's TPE, so the service selects kubetune's ``preset: hyperopt``)."""
    return {"type": algorithm, "preset": "hyperopt"} if algorithm == "tpe" else {"type": algorithm}


# ------------------------------------------------------------------------------------------ fixtures and helpers
@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    srv = ServerProcess()
    try:
        srv.connect()
        yield srv
    finally:
        srv.close()


@pytest.fixture(scope="module")
def stub(server: ServerProcess) -> Any:
    return server.suggestion_stub()


def rpc_error(call: Callable[[], Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def assert_invalid(call: Callable[[], Any], *needles: str) -> None:
    err = rpc_error(call)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details())
    for needle in needles:
        assert needle in err.details(), (needle, err.details())


def good_request(count: int = 2) -> pb.GetSuggestionsRequest:
    return pb.GetSuggestionsRequest(experiment=experiment_message("good", BRANIN, "random"),
                                    current_request_number=count)


def assert_serving(stub: Any) -> None:
    reply = stub.GetSuggestions(good_request(), timeout=RPC_TIMEOUT)
    assert len(reply.parameter_assignments) == 2


def in_space(parameters: Sequence[Mapping[str, Any]], assignment: Mapping[str, str]) -> bool:
    """Is a reply's assignment a legal value of every parameter (Katib's text, as the trial receives it)?"""
    if set(assignment) != {p["name"] for p in parameters}:
        return False
    for p in parameters:
        text, fs = assignment[p["name"]], p["feasibleSpace"]
        if p["parameterType"] in ("discrete", "categorical"):
            if text not in fs["list"]:
                return False
            continue
        value = float(parse_value(p, text))  # int() rejects "2.0": Katib's int text must be an integer
        if not float(fs["min"]) <= value <= float(fs["max"]):
            return False
    return True


def check_experiment(d: KatibDriver, parameters: Sequence[Mapping[str, Any]]) -> None:
    """Every assignment legal, none repeated within a batch nor across the experiment."""
    for batch in d.batches:
        keys = [tuple(sorted(a.items())) for a in batch]
        assert len(set(keys)) == len(keys), f"{d.name}: duplicate in one reply: {batch}"
    keys = [t.key() for t in d.trials]
    assert len(set(keys)) == len(keys), f"{d.name}: an assignment was suggested twice"
    bad = [t.params for t in d.trials if not in_space(parameters, t.params)]
    assert not bad, f"{d.name}: assignments outside the space: {bad[:3]}"


def direct_best(parameters: Sequence[Mapping[str, Any]], objective: Callable[[Mapping[str, Any]], float],
                algorithm: str, seed: int, n: int = MAX_TRIALS) -> float:
    """The same kubetune searcher used directly: a Study asked in batches of 3, as the driver asks."""
    study = kt.Study(kt.SearchSpace.from_katib([dict(p) for p in parameters]), searcher_config(algorithm), seed=seed)
    while len(study.trials) < n:
        for t in study.ask(min(3, n - len(study.trials))):
            study.tell(t.id, objective(dict(t.params)))
    assert study.best_value is not None
    return float(study.best_value)


@pytest.fixture(scope="module")
def service_regrets(stub: Any) -> Callable[[str, str], List[float]]:
    cache: Dict[Tuple[str, str], List[float]] = {}

    def get(space: str, algorithm: str) -> List[float]:
        if (space, algorithm) not in cache:
            parameters, objective, optimum = SPACES[space]
            out = []
            n = BUDGET.get(algorithm, MAX_TRIALS)
            for i in range(N_RUNS):
                d = KatibDriver(stub, f"{space}-{algorithm}-{i}", parameters, algorithm, objective,
                                max_trials=n, rpc_timeout=RPC_TIMEOUT).run()
                assert len(d.trials) == n and not d.exhausted and d.unavailable == 0
                assert [len(b) for b in d.batches] == [3] * (n // 3)
                check_experiment(d, parameters)
                out.append(d.best_value() - optimum)
            cache[(space, algorithm)] = out
        return cache[(space, algorithm)]

    return get


def test_driver_merges_settings_as_katib_does() -> None:
    # suggestionclient.go: a setting of the same name gets the new value in place, a new name is appended
    status = [("eta", "3"), ("kubetune.state/a", "rung=0")]
    merge_settings(status, [("kubetune.state/b", "rung=1"), ("kubetune.state/a", "rung=1")])
    assert status == [("eta", "3"), ("kubetune.state/a", "rung=1"), ("kubetune.state/b", "rung=1")]


# ------------------------------------------------------------------------------------------ searchers via Katib
@pytest.mark.parametrize("space", sorted(SPACES))
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_service_searches_as_well_as_the_searcher_used_directly(
        service_regrets: Callable[[str, str], List[float]], space: str, algorithm: str) -> None:
    parameters, objective, optimum = SPACES[space]
    service = service_regrets(space, algorithm)
    n = BUDGET.get(algorithm, MAX_TRIALS)
    direct = [direct_best(parameters, objective, algorithm, seed, n) - optimum for seed in range(N_RUNS)]
    ms, md = statistics.median(service), statistics.median(direct)
    # Both sides are the same searcher on different random streams (151 runs of each agree in median and mean;
    # mixed-space regrets are bimodal: a wrong layer count alone costs 0.25). A median over 15 runs still
    # scatters by a factor ~2; bootstrapped from those 151 runs, 2x + 0.2 (Branin) / 0.15 (mixed) fails an
    # equal pair <= 2% of the time, and fails a service that searched at random instead of by its model.
    slack = 0.2 if space == "branin" else 0.15
    assert ms <= 2 * md + slack, f"median regret via Katib {ms:.4f} vs direct {md:.4f}: {service} / {direct}"


@pytest.mark.parametrize("space", sorted(SPACES))
@pytest.mark.parametrize("algorithm", ["multivariate-tpe", "bayesianoptimization"])
def test_model_based_searchers_beat_random_search_via_katib(
        service_regrets: Callable[[str, str], List[float]], space: str, algorithm: str) -> None:
    # Power for the comparison above: a service whose model never saw the metrics would search at random.
    model, rand = statistics.median(service_regrets(space, algorithm)), statistics.median(
        service_regrets(space, "random"))
    assert model < 0.5 * rand, (model, rand)


@pytest.mark.parametrize("parameters,objective,settings,size", [
    (BRANIN_GRID, branin, [], 49),
    (MIXED_GRID, mixed, [("default_points", "3")], 54),
], ids=["branin", "mixed"])
def test_grid_is_exhaustive_then_exhausted(stub: Any, parameters: List[Dict[str, Any]],
                                           objective: Callable[[Mapping[str, Any]], float],
                                           settings: List[Tuple[str, str]], size: int) -> None:
    d = KatibDriver(stub, f"grid-{size}", parameters, "grid", objective, settings=settings,
                    max_trials=MAX_TRIALS, rpc_timeout=RPC_TIMEOUT).run()
    check_experiment(d, parameters)
    assert d.exhausted and len(d.trials) == size
    # full replies of 3, then the short one that ends the search: 49 = 16*3 + 1, 54 = 18*3 (+ an empty reply)
    assert [len(b) for b in d.batches] == [3] * (size // 3) + [size % 3]
    # exactly kubetune's grid, point for point
    grid_settings = {k: v for k, v in settings}
    direct = kt.Study(kt.SearchSpace.from_katib(parameters), {"type": "grid", **grid_settings}).ask(1000)
    assert len(direct) == size

    def key(params: Mapping[str, Any]) -> Tuple[Any, ...]:
        return tuple(sorted((k, v if isinstance(v, str) else float(v)) for k, v in params.items()))

    by_name = {p["name"]: p for p in parameters}
    served = {key({k: parse_value(by_name[k], v) for k, v in t.assignments}) for t in d.trials}
    assert served == {key(t.params) for t in direct}
    assert d.best_value() == min(objective(dict(t.params)) for t in direct)
    # an exhausted grid keeps answering with no assignment (not an error)
    reply = stub.GetSuggestions(d.request(3), timeout=RPC_TIMEOUT)
    assert len(reply.parameter_assignments) == 0


# ------------------------------------------------------------------------------------------ Hyperband
def expected_budget_counts(r_l: int) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for bracket in kt.hyperband_brackets(r_l, 3):
        for n, budget in bracket["rungs"]:
            counts[int(budget)] += n
    return counts


def check_hyperband_schedule(d: KatibDriver, r_l: int) -> None:
    trials = d.trials
    budgets = collections.Counter(int(t.params["epochs"]) for t in trials)
    assert budgets == expected_budget_counts(r_l)
    # lineage: a config (lr) first appears at its bracket's first budget, promoted copies keep it
    first: Dict[str, int] = {}
    rungs: Dict[str, List[Tuple[int, float]]] = collections.defaultdict(list)
    for t in trials:
        first.setdefault(t.params["lr"], int(t.params["epochs"]))
        assert t.value is not None
        rungs[t.params["lr"]].append((int(t.params["epochs"]), t.value))
    for lr, evals in rungs.items():
        assert [b for b, _ in evals] == sorted({b for b, _ in evals}), f"lr={lr}: budgets {evals}"
    brackets = {b["rungs"][0][1]: b["rungs"] for b in kt.hyperband_brackets(r_l, 3)}
    for start, bracket_rungs in brackets.items():
        members = [lr for lr, b in first.items() if b == int(start)]
        for (n, budget), (n_next, _) in zip(bracket_rungs, list(bracket_rungs[1:]) + [(0, 0.0)]):
            at_rung = {lr: v for lr in members for b, v in rungs[lr] if b == int(budget)}
            assert len(at_rung) == n, (start, budget, len(at_rung))
            promoted = {lr for lr in at_rung if any(b > int(budget) for b, _ in rungs[lr])}
            best = set(sorted(at_rung, key=at_rung.__getitem__)[:n_next])
            assert promoted == best, f"bracket {start}: promoted {promoted} are not the best {n_next} at {budget}"


@pytest.mark.parametrize("completion", ["batch", "oldest"])
def test_hyperband_runs_its_whole_bracket_schedule(stub: Any, completion: str) -> None:
    r_l = 9
    d = KatibDriver(stub, f"hb-{completion}", hyperband_space(r_l), "hyperband", learning_curve,
                    settings=hyperband_settings(r_l), parallel=3, max_trials=MAX_TRIALS, completion=completion,
                    rpc_timeout=RPC_TIMEOUT).run()
    assert d.exhausted and len(d.trials) == 22 < MAX_TRIALS  # 9 + 5 + 3 configs over 3 brackets
    check_hyperband_schedule(d, r_l)
    # the bookkeeping travelled in the Suggestion status: one kubetune.state entry per trial
    assert sum(1 for k, _ in d.status_settings if k.startswith("kubetune.state/")) == len(d.trials)
    if completion == "oldest":
        assert d.unavailable > 0  # rungs made the service wait for running trials, Katib retried


def test_hyperband_schedule_does_not_end_early_when_parallel_exceeds_a_rung(stub: Any) -> None:
    r_l = 9
    d = KatibDriver(stub, "hb-parallel-8", hyperband_space(r_l), "hyperband", learning_curve,
                    settings=hyperband_settings(r_l), parallel=8, max_trials=MAX_TRIALS,
                    rpc_timeout=RPC_TIMEOUT)
    try:
        stub.ValidateAlgorithmSettings(pb.ValidateAlgorithmSettingsRequest(experiment=d.experiment()),
                                       timeout=RPC_TIMEOUT)
    except grpc.RpcError as exc:  # an acceptable fix: refuse the configuration up front, naming why
        assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT and "parallel" in exc.details()
        return
    d.run()
    check_hyperband_schedule(d, r_l)


# ------------------------------------------------------------------------------------------ restart, concurrency
def restart_experiments(stub: Any) -> List[KatibDriver]:
    return [
        KatibDriver(stub, "restart-sobol", BRANIN, "sobol", branin, max_trials=30, rpc_timeout=RPC_TIMEOUT),
        KatibDriver(stub, "restart-mtpe", MIXED, "multivariate-tpe", mixed, max_trials=30, completion="oldest",
                    rpc_timeout=RPC_TIMEOUT),
        KatibDriver(stub, "restart-hb", hyperband_space(27), "hyperband", learning_curve,
                    settings=hyperband_settings(27), max_trials=MAX_TRIALS, completion="oldest",
                    rpc_timeout=RPC_TIMEOUT),
    ]


def test_server_killed_and_restarted_mid_experiment_continues_identically(stub: Any) -> None:
    reference = [d.run() for d in restart_experiments(stub)]
    first = ServerProcess()
    second: Optional[ServerProcess] = None
    try:
        drivers = restart_experiments(first.suggestion_stub())
        for d in drivers:
            d.run(stop_after=20)
            assert 20 <= len(d.trials) < 23 and not d.done
        assert any(d.running for d in drivers)  # killed with trials in flight
        first.kill()
        assert first.proc.returncode == -signal.SIGKILL
        second = ServerProcess()
        assert second.proc.pid != first.proc.pid
        for d in drivers:
            d.stub = second.suggestion_stub()
            d.run()
        for d, ref in zip(drivers, reference):
            assert d.assignment_sequence() == ref.assignment_sequence(), d.name
            assert [t.name for t in d.trials] == [t.name for t in ref.trials]
            assert d.status_settings == ref.status_settings
        assert len(reference[2].trials) == 60  # Hyperband r_l=27 stopped by maxTrialCount
    finally:
        first.close()
        if second is not None:
            second.close()


def concurrent_experiments(stub: Any) -> List[KatibDriver]:
    return [
        KatibDriver(stub, "conc-tpe", BRANIN, "tpe", branin, max_trials=30, rpc_timeout=RPC_TIMEOUT),
        KatibDriver(stub, "conc-gp", MIXED, "bayesianoptimization", mixed, max_trials=30, completion="oldest",
                    rpc_timeout=RPC_TIMEOUT),
        KatibDriver(stub, "conc-sobol", MIXED, "sobol", mixed, max_trials=30, rpc_timeout=RPC_TIMEOUT),
        KatibDriver(stub, "conc-hb", hyperband_space(9), "hyperband", learning_curve,
                    settings=hyperband_settings(9), max_trials=30, completion="oldest", rpc_timeout=RPC_TIMEOUT),
    ]


class RecordingStub:
    """A SuggestionStub that logs which experiment each GetSuggestions call served, in the order they end."""

    def __init__(self, channel: grpc.Channel, log: List[str]) -> None:
        self._stub = pb_grpc.SuggestionStub(channel)
        self._log = log

    def GetSuggestions(self, request: pb.GetSuggestionsRequest, timeout: float) -> Any:  # noqa: N802
        try:
            return self._stub.GetSuggestions(request, timeout=timeout)
        finally:
            self._log.append(request.experiment.name)  # list.append is atomic under the GIL


def test_four_experiments_at_once_equal_their_solo_runs(server: ServerProcess, stub: Any) -> None:
    solo = [d.run() for d in concurrent_experiments(stub)]
    channels = [grpc.insecure_channel(server.address) for _ in solo]
    try:
        drivers = concurrent_experiments(None)
        log: List[str] = []
        for d, ch in zip(drivers, channels):
            d.stub = RecordingStub(ch, log)
        start = threading.Barrier(len(drivers), timeout=THREAD_TIMEOUT)
        errors: List[BaseException] = []

        def work(d: KatibDriver) -> None:
            try:
                start.wait()
                d.run()
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(d,), daemon=True) for d in drivers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(THREAD_TIMEOUT)
        assert not any(t.is_alive() for t in threads), "a driver thread did not finish"
        assert not errors, errors
        # the calls of the four experiments interleaved (4 contiguous blocks would mean 3 switches)
        assert sum(a != b for a, b in zip(log, log[1:])) > 10, log
        for d, ref in zip(drivers, solo):
            assert d.done and d.assignment_sequence() == ref.assignment_sequence(), d.name
            assert [t.name for t in d.trials] == [t.name for t in ref.trials]
            assert d.status_settings == ref.status_settings
        assert [len(d.trials) for d in drivers] == [30, 30, 30, 22]
    finally:
        for ch in channels:
            ch.close()


# ------------------------------------------------------------------------------------------ trials as Katib sends them
def grid_trials(condition_of: Callable[[int], str]) -> Tuple[List[pb.Trial], Dict[str, str]]:
    """The 49-point Branin grid as trials but for its first point (returned as the missing assignment)."""
    points = kt.Study(kt.SearchSpace.from_katib(BRANIN_GRID), "grid").ask(100)
    assert len(points) == 49
    text = [{k: repr(float(v)) for k, v in t.params.items()} for t in points]
    trials = []
    for i, a in enumerate(text[1:]):
        c = condition_of(i)
        trials.append(trial_message(f"g-{i:02d}", sorted(a.items()), c,
                                    [("loss", "1.5")] if c in ("SUCCEEDED", "EARLYSTOPPED") else []))
    return trials, text[0]


@pytest.mark.parametrize("condition,running", [
    ("CREATED", True), ("RUNNING", True), ("UNKNOWN", True),
    ("FAILED", False), ("KILLED", False), ("EARLYSTOPPED", False), ("METRICSUNAVAILABLE", False),
])
def test_trial_conditions_map_to_running_or_finished(stub: Any, condition: str, running: bool) -> None:
    trials, missing = grid_trials(lambda i: condition if i % 2 else "SUCCEEDED")
    exp = experiment_message("conditions", BRANIN_GRID, "grid")
    # no trial of any condition is suggested again: the one point left comes back
    one = stub.GetSuggestions(pb.GetSuggestionsRequest(experiment=exp, trials=trials, current_request_number=1),
                              timeout=RPC_TIMEOUT)
    got = {a.name: float(a.value) for a in one.parameter_assignments[0].assignments}
    assert got == {k: float(v) for k, v in missing.items()}
    # asking for 2: with trials running the service must wait (UNAVAILABLE), with all finished it is exhausted
    req = pb.GetSuggestionsRequest(experiment=exp, trials=trials, current_request_number=2)
    if running:
        err = rpc_error(lambda: stub.GetSuggestions(req, timeout=RPC_TIMEOUT))
        assert err.code() == grpc.StatusCode.UNAVAILABLE and "running" in err.details()
    else:
        assert len(stub.GetSuggestions(req, timeout=RPC_TIMEOUT).parameter_assignments) == 1


def tpe_request(metrics_of: Callable[[int], List[Tuple[str, str]]], order: Sequence[int]) -> pb.GetSuggestionsRequest:
    exp = experiment_message("metrics", BRANIN, "tpe", [("n_startup_trials", "2")])
    points = [(-5 + 1.5 * i, 14.0 - 1.3 * i) for i in range(10)]
    trials = [trial_message(f"m-{i}", [("x1", repr(points[i][0])), ("x2", repr(points[i][1]))], "SUCCEEDED",
                            metrics_of(i)) for i in order]
    return pb.GetSuggestionsRequest(experiment=exp, trials=trials, current_request_number=3)


def test_objective_is_read_by_metric_name_and_trial_order_does_not_matter(stub: Any) -> None:
    def loss(i: int) -> str:
        return repr(branin({"x1": -5 + 1.5 * i, "x2": 14.0 - 1.3 * i}))

    def reply(req: pb.GetSuggestionsRequest) -> bytes:
        return stub.GetSuggestions(req, timeout=RPC_TIMEOUT).SerializeToString(deterministic=True)

    base = reply(tpe_request(lambda i: [("loss", loss(i))], range(10)))
    # other metrics around the objective, and Katib's arbitrary trial order, change nothing
    assert reply(tpe_request(lambda i: [("accuracy", "0.5"), ("loss", loss(i)), ("epoch", "n/a")], range(10))) == base
    assert reply(tpe_request(lambda i: [("loss", loss(i))], [3, 7, 0, 9, 1, 8, 2, 6, 4, 5])) == base
    # ... while the objective's values do
    assert reply(tpe_request(lambda i: [("loss", loss(9 - i))], range(10))) != base


def test_failing_trials_do_not_stop_the_experiment(stub: Any) -> None:
    def objective(p: Mapping[str, Any]) -> Optional[float]:
        return None if p["x1"] < 0 else branin(p)  # the trial's job fails: Katib marks it FAILED

    d = KatibDriver(stub, "failing", BRANIN, "multivariate-tpe", objective, max_trials=30,
                    completion="oldest", rpc_timeout=RPC_TIMEOUT).run()
    failed = [t for t in d.trials if t.condition == "FAILED"]
    assert len(d.trials) == 30 and 0 < len(failed) < 30
    check_experiment(d, BRANIN)
    assert d.best_value() == min(branin({k: float(v) for k, v in t.assignments}) for t in d.trials
                                 if float(t.params["x1"]) >= 0)


# ------------------------------------------------------------------------------------------ bad input
def param(name: str = "x1", kind: str = "double", **fs: Any) -> Dict[str, Any]:
    return {"name": name, "parameterType": kind, "feasibleSpace": fs}


def raw_experiment(parameters: Sequence[Any], algorithm: str = "random",
                   settings: Sequence[Tuple[str, str]] = ()) -> pb.Experiment:
    """experiment_message, but parameters may also be ready ParameterSpec messages (for enum values no CRD has)."""
    exp = experiment_message("bad", [p for p in parameters if isinstance(p, dict)], algorithm, settings)
    exp.spec.parameter_specs.parameters.extend(p for p in parameters if isinstance(p, pb.ParameterSpec))
    return exp


X2 = param("x2", min="0", max="15")
BAD_SPACES = {
    "empty discrete list": ([param(kind="discrete", list=[])], ["'x1'", "list is empty"]),
    "empty categorical list": ([param(kind="categorical", list=[])], ["'x1'", "list is empty"]),
    "inverted double": ([param(min="10", max="-5")], ["'x1'", "inverted"]),
    "inverted int": ([param(kind="int", min="10", max="1")], ["'x1'", "inverted"]),
    "unknown type": ([pb.ParameterSpec(name="x1", parameter_type=pb.UNKNOWN_TYPE,
                                       feasible_space=pb.FeasibleSpace(min="0", max="1"))],
                     ["'x1'", "unknown parameter type 'UNKNOWN_TYPE'"]),
    "type outside the enum": ([pb.ParameterSpec(name="x1", parameter_type=17,
                                                feasible_space=pb.FeasibleSpace(min="0", max="1"))],
                              ["'x1'", "unknown parameter type '17'"]),
    "log-uniform min 0": ([param(min="0", max="1", distribution="logUniform")], ["'x1'", "log", "> 0"]),
    "log-uniform min < 0": ([param(min="-1", max="1", distribution="logUniform")], ["'x1'", "log", "> 0"]),
    "unparsable bound": ([param(min="abc", max="1")], ["x1.min", "'abc'"]),
    "infinite bound": ([param(min="0", max="inf")], ["'x1'", "finite"]),
    "duplicate names": ([param(min="0", max="1"), param(min="0", max="2")], ["'x1'", "declared twice"]),
    "no parameters": ([], ["no parameters"]),
}


@pytest.mark.parametrize("case", sorted(BAD_SPACES))
def test_bad_search_space_is_invalid_argument_naming_it(stub: Any, case: str) -> None:
    parameters, needles = BAD_SPACES[case]
    exp = raw_experiment(parameters)
    assert_invalid(lambda: stub.ValidateAlgorithmSettings(pb.ValidateAlgorithmSettingsRequest(experiment=exp),
                                                          timeout=RPC_TIMEOUT), *needles)
    assert_invalid(lambda: stub.GetSuggestions(pb.GetSuggestionsRequest(experiment=exp, current_request_number=1),
                                               timeout=RPC_TIMEOUT), *needles)
    assert_serving(stub)


def branin_trial(assignments: Sequence[Tuple[str, str]], condition: str = "SUCCEEDED",
                 metrics: Sequence[Tuple[str, str]] = (("loss", "1.5"),)) -> pb.Trial:
    return trial_message("bad-trial", assignments, condition, metrics)


BAD_TRIALS = {
    "parameter missing": (branin_trial([("x1", "1")]), ["'bad-trial'", "'x2'", "missing"]),
    "assigned twice": (branin_trial([("x1", "1"), ("x1", "2"), ("x2", "1")]), ["'bad-trial'", "'x1'", "twice"]),
    "unknown parameter": (branin_trial([("x1", "1"), ("x2", "1"), ("x3", "1")]), ["'bad-trial'", "'x3'"]),
    "out of range": (branin_trial([("x1", "11"), ("x2", "1")]), ["'bad-trial'", "'x1'", "11", "outside"]),
    "not a number": (branin_trial([("x1", "one"), ("x2", "1")]), ["'bad-trial'", "'x1'", "'one'"]),
    "metric not a number": (branin_trial([("x1", "1"), ("x2", "1")], metrics=[("loss", "n/a")]),
                            ["'bad-trial'", "'loss'", "'n/a'", "not a number"]),
    "metric missing": (branin_trial([("x1", "1"), ("x2", "1")], metrics=[("accuracy", "0.9")]),
                       ["'bad-trial'", "'loss'"]),
}


@pytest.mark.parametrize("case", sorted(BAD_TRIALS))
def test_bad_trial_is_invalid_argument_naming_it(stub: Any, case: str) -> None:
    trial, needles = BAD_TRIALS[case]
    req = pb.GetSuggestionsRequest(experiment=experiment_message("bad", BRANIN, "tpe"), trials=[trial],
                                   current_request_number=1)
    assert_invalid(lambda: stub.GetSuggestions(req, timeout=RPC_TIMEOUT), *needles)
    assert_serving(stub)


def test_long_metric_text_of_a_succeeded_trial_is_read_exactly(stub: Any) -> None:
    # 17 significant digits (Python's repr of a float) and a 60-character spelling of the same number: the
    # service must read the text it was sent (a dangling reference once read freed memory here).
    exp = experiment_message("long-metric", BRANIN, "tpe", [("n_startup_trials", "1")])
    replies = []
    for text in ("0.30000000000000004", "0.3000000000000000444089209850062616169452667236328125000000"):
        trials = [branin_trial([("x1", "1"), ("x2", "2")], metrics=[("loss", text)]),
                  trial_message("t2", [("x1", "3"), ("x2", "4")], "SUCCEEDED", [("loss", "1" + "0" * 40)])]
        reply = stub.GetSuggestions(pb.GetSuggestionsRequest(experiment=exp, trials=trials,
                                                             current_request_number=2), timeout=RPC_TIMEOUT)
        replies.append(reply.SerializeToString(deterministic=True))
    assert replies[0] == replies[1]


BAD_ALGORITHMS = {
    "unknown algorithm": ("cmaes", BRANIN, [], ["'cmaes'", "unknown algorithm"]),
    "unknown setting": ("tpe", BRANIN, [("n_trees", "3")], ["'n_trees'"]),
    "setting given twice": ("tpe", BRANIN, [("gamma", "0.1"), ("gamma", "0.2")], ["'gamma'", "twice"]),
    "negative integer setting": ("tpe", BRANIN, [("n_startup_trials", "-1")], ["'n_startup_trials'", "-1"]),
    "unparsable setting": ("multivariate-tpe", BRANIN, [("n_startup_trials", "ten")],
                           ["'n_startup_trials'", "'ten'"]),
    "fractional integer setting": ("tpe", BRANIN, [("n_startup_trials", "2.5")], ["'n_startup_trials'", "2.5"]),
    "out-of-range float setting": ("tpe", BRANIN, [("gamma", "-1")], ["gamma", "-1"]),
    "gp acquisition": ("bayesianoptimization", BRANIN, [("acq_func", "magic")], ["acq_func", "'magic'"]),
    "gp estimator": ("bayesianoptimization", BRANIN, [("base_estimator", "RF")], ["'base_estimator'", "'RF'"]),
    "gp initial points": ("bayesianoptimization", BRANIN, [("n_initial_points", "-3")], ["n_initial_points", "-3"]),
    "random_state": ("random", BRANIN, [("random_state", "-5")], ["'random_state'", "-5"]),
    "sobol boolean": ("sobol", BRANIN, [("scramble", "maybe")], ["'scramble'", "maybe"]),
    "hyperband eta": ("hyperband", hyperband_space(9), hyperband_settings(9)[:1] + [("eta", "1")] + [
        ("resource_name", "epochs")], ["'eta'", "1"]),
    "hyperband r_l": ("hyperband", hyperband_space(9), [("r_l", "nine"), ("resource_name", "epochs")],
                      ["'nine'"]),
    "hyperband no resource_name": ("hyperband", hyperband_space(9), [("r_l", "9")], ["'resource_name'"]),
    "hyperband unknown resource": ("hyperband", hyperband_space(9), [("r_l", "9"), ("resource_name", "steps")],
                                   ["'steps'", "resource_name"]),
    "hyperband budget outside range": ("hyperband", hyperband_space(9), hyperband_settings(27)[:1] + [
        ("resource_name", "epochs")], ["'epochs'", "outside"]),
    "grid without step": ("grid", BRANIN, [], ["'x1'", "step"]),
    "grid too large": ("grid", BRANIN, [("default_points", "1000000000000")], ["'x1'", "too many"]),
    "malformed state": ("sobol", BRANIN, [("kubetune.state/0123456789abcdef", "index")],
                        ["'kubetune.state/0123456789abcdef'", "'index'"]),
    "oversized state": ("sobol", BRANIN, [("kubetune.state/0123456789abcdef", "index=1," * 1000)],
                        ["'kubetune.state/0123456789abcdef'", "too long"]),
}


@pytest.mark.parametrize("case", sorted(BAD_ALGORITHMS))
def test_bad_algorithm_settings_are_invalid_argument_naming_them(stub: Any, case: str) -> None:
    algorithm, parameters, settings, needles = BAD_ALGORITHMS[case]
    exp = experiment_message("bad", parameters, algorithm, settings)
    assert_invalid(lambda: stub.ValidateAlgorithmSettings(pb.ValidateAlgorithmSettingsRequest(experiment=exp),
                                                          timeout=RPC_TIMEOUT), *needles)
    assert_invalid(lambda: stub.GetSuggestions(pb.GetSuggestionsRequest(experiment=exp, current_request_number=1),
                                               timeout=RPC_TIMEOUT), *needles)
    assert_serving(stub)


@pytest.mark.parametrize("algorithm,parameters,settings", [
    ("random", BRANIN, []), ("sobol", BRANIN, [("scramble", "false")]), ("grid", BRANIN_GRID, []),
    ("tpe", MIXED, [("n_startup_trials", "5"), ("gamma", "0.25")]), ("multivariate-tpe", MIXED, []),
    ("bayesianoptimization", MIXED, [("n_initial_points", "5"), ("acq_func", "ei"), ("random_state", "7")]),
    ("hyperband", hyperband_space(9), hyperband_settings(9)),
], ids=lambda v: v if isinstance(v, str) else None)
def test_valid_algorithm_settings_validate(stub: Any, algorithm: str, parameters: List[Dict[str, Any]],
                                           settings: List[Tuple[str, str]]) -> None:
    exp = experiment_message("ok", parameters, algorithm, settings)
    stub.ValidateAlgorithmSettings(pb.ValidateAlgorithmSettingsRequest(experiment=exp), timeout=RPC_TIMEOUT)


@pytest.mark.parametrize("count", [-1, -(2 ** 31), 10001, 2 ** 31 - 1])
def test_request_number_out_of_range_is_invalid_argument(stub: Any, count: int) -> None:
    req = good_request(count)
    assert_invalid(lambda: stub.GetSuggestions(req, timeout=RPC_TIMEOUT), "current_request_number", str(count))
    assert_serving(stub)


def test_zero_requested_suggestions_answer_none(stub: Any) -> None:
    assert len(stub.GetSuggestions(good_request(0), timeout=RPC_TIMEOUT).parameter_assignments) == 0


def test_ten_megabyte_request_is_resource_exhausted_and_the_server_lives_on(stub: Any) -> None:
    exp = experiment_message("huge", BRANIN, "random", [("random_state", "1"), ("padding", "x" * (10 << 20))])
    req = pb.GetSuggestionsRequest(experiment=exp, current_request_number=1)
    assert req.ByteSize() > 10 << 20
    err = rpc_error(lambda: stub.GetSuggestions(req, timeout=RPC_TIMEOUT))
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (err.code(), err.details())
    assert_serving(stub)


# ------------------------------------------------------------------------------------------ health, shutdown
# The services' full names come from the proto (package api.v1.beta1, so "api.v1.beta1.Suggestion").
@pytest.mark.parametrize("service", ["", pb.DESCRIPTOR.services_by_name["Suggestion"].full_name,
                                     pb.DESCRIPTOR.services_by_name["EarlyStopping"].full_name])
def test_health_check_is_serving(server: ServerProcess, service: str) -> None:
    health = health_pb2_grpc.HealthStub(server.channel or server.connect())
    reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=RPC_TIMEOUT)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_health_check_answers_katibs_probe_service_name(server: ServerProcess) -> None:
    health = health_pb2_grpc.HealthStub(server.channel or server.connect())
    reply = health.Check(health_pb2.HealthCheckRequest(service="manager.v1beta1.Suggestion"), timeout=RPC_TIMEOUT)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_health_check_of_an_unknown_service_is_not_found(server: ServerProcess) -> None:
    health = health_pb2_grpc.HealthStub(server.channel or server.connect())
    err = rpc_error(lambda: health.Check(health_pb2.HealthCheckRequest(service="api.v1beta1.Nope"),
                                         timeout=RPC_TIMEOUT))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_sigterm_stops_the_server_with_exit_status_0() -> None:
    srv = ServerProcess()
    try:
        assert_serving(srv.suggestion_stub())
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=10) == 0, srv.stderr()
        assert time.monotonic() - t0 < 5.0
    finally:
        srv.close()
