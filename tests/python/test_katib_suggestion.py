"""kubetune.katib.SuggestionService in the style Katib tests its own services (grpcio-testing)."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

pytest.importorskip("kubeflow.katib")
grpc = pytest.importorskip("grpc")
grpc_testing = pytest.importorskip("grpc_testing")

from kubeflow.katib import katib_api_pb2 as pb  # noqa: E402

import kubetune as kt  # noqa: E402
from kubetune.katib import SuggestionService, algorithm_names  # noqa: E402

SERVICE = pb.DESCRIPTOR.services_by_name["Suggestion"]
STATE_PREFIX = "kubetune.state/"


@pytest.fixture(scope="module")
def server() -> Any:
    return grpc_testing.server_from_dictionary({SERVICE: SuggestionService()}, grpc_testing.strict_real_time())


def call(server: Any, method: str, request: Any) -> Tuple[Any, Any, str]:
    rpc = server.invoke_unary_unary(SERVICE.methods_by_name[method], (), request, None)
    reply, _, code, details = rpc.termination()
    return reply, code, details


def mixed_parameters(grid: bool = False) -> List[Any]:
    """Log double, int, discrete, categorical; for grid the double has a step (Katib's grid needs one)."""
    fs = pb.FeasibleSpace
    lr = fs(min="0.0001", max="0.1", step="0.02") if grid else fs(min="0.0001", max="0.1", distribution=pb.LOG_UNIFORM)
    return [
        pb.ParameterSpec(name="lr", parameter_type=pb.DOUBLE, feasible_space=lr),
        pb.ParameterSpec(name="layers", parameter_type=pb.INT, feasible_space=fs(min="1", max="9")),
        pb.ParameterSpec(name="drop", parameter_type=pb.DISCRETE, feasible_space=fs(list=["0.1", "0.25", "0.5"])),
        pb.ParameterSpec(name="opt", parameter_type=pb.CATEGORICAL, feasible_space=fs(list=["sgd", "adam", "rms"])),
    ]


def experiment(algorithm: str, settings: Optional[Dict[str, str]] = None, parameters: Any = None,
               name: str = "exp", objective: int = pb.MINIMIZE) -> Any:
    spec = pb.ExperimentSpec(
        algorithm=pb.AlgorithmSpec(algorithm_name=algorithm, algorithm_settings=[
            pb.AlgorithmSetting(name=k, value=v) for k, v in (settings or {}).items()]),
        objective=pb.ObjectiveSpec(type=objective, objective_metric_name="loss"),
        parameter_specs=pb.ExperimentSpec.ParameterSpecs(
            parameters=mixed_parameters(grid=True) if parameters == "grid" else parameters or mixed_parameters()),
        parallel_trial_count=3, max_trial_count=12)
    return pb.Experiment(name=name, spec=spec)


def trial(name: str, assignments: Sequence[Tuple[str, str]], condition: int,
          loss: Optional[str] = None) -> Any:
    t = pb.Trial(name=name, spec=pb.TrialSpec(parameter_assignments=pb.TrialSpec.ParameterAssignments(
        assignments=[pb.ParameterAssignment(name=k, value=v) for k, v in assignments])))
    t.status.condition = condition
    if loss is not None:
        t.status.observation.metrics.extend([pb.Metric(name="accuracy", value="0.5"), pb.Metric(name="loss", value=loss)])
    return t


def pairs(assignment: Any) -> List[Tuple[str, str]]:
    return [(a.name, a.value) for a in assignment.assignments]


def loss_of(p: Dict[str, str]) -> float:
    return (math.log10(float(p["lr"])) + 2) ** 2 + abs(int(p["layers"]) - 4) + float(p["drop"]) + (p["opt"] != "adam")


# name, settings, parameters (None: the mixed space)
ALGORITHMS: List[Tuple[str, Dict[str, str], Any]] = [
    ("random", {"random_state": "3"}, None),
    ("grid", {}, "grid"),
    ("sobol", {}, None),
    ("tpe", {"n_startup_jobs": "2"}, None),
    ("multivariate-tpe", {"n_startup_trials": "2"}, None),
    ("bayesianoptimization", {"n_initial_points": "2", "random_state": "1"}, None),
    ("gp", {"n_initial_points": "2"}, None),
    ("hyperband", {"r_l": "9", "eta": "3", "resource_name": "layers"}, None),
    ("bohb", {"r_l": "9", "eta": "3", "resource_name": "layers"}, None),
    ("asha", {"r_l": "9", "eta": "3", "resource_name": "layers"}, None),
]


def test_every_katib_algorithm_is_served() -> None:
    assert {a for a, _, _ in ALGORITHMS} | {"darts"} == set(algorithm_names())


@pytest.mark.parametrize("algorithm,settings,parameters", ALGORITHMS, ids=[a for a, _, _ in ALGORITHMS])
def test_get_suggestions_without_and_with_trials(server: Any, algorithm: str, settings: Dict[str, str],
                                                 parameters: Any) -> None:
    exp = experiment(algorithm, settings, parameters)
    reply, code, details = call(server, "GetSuggestions", pb.GetSuggestionsRequest(experiment=exp,
                                                                                  current_request_number=3))
    assert code == grpc.StatusCode.OK, details
    first = [pairs(a) for a in reply.parameter_assignments]
    assert len(first) == 3 and len({tuple(a) for a in first}) == 3
    for a in first:
        assert [k for k, _ in a] == ["lr", "layers", "drop", "opt"]
        kt_space = kt.SearchSpace.from_katib([{"name": "lr", "parameterType": "double", "feasibleSpace": {
            "min": "0.0001", "max": "0.1", "distribution": "logUniform"}}])
        kt_space.validate({"lr": float(a[0][1])})
        assert 1 <= int(a[1][1]) <= 9 and a[2][1] in ("0.1", "0.25", "0.5") and a[3][1] in ("sgd", "adam", "rms")
    # Katib merges the reply's algorithm settings into the next request's experiment.
    for s in reply.algorithm.algorithm_settings:
        assert s.name.startswith(STATE_PREFIX)
        exp.spec.algorithm.algorithm_settings.append(s)
    # Two finished, one still running: the next batch avoids all three and is itself distinct.
    finished = [trial(f"exp-{i}", a, pb.TrialStatus.SUCCEEDED, str(loss_of(dict(a)))) for i, a in enumerate(first[:2])]
    running = [trial("exp-2", first[2], pb.TrialStatus.RUNNING)]
    request = pb.GetSuggestionsRequest(experiment=exp, trials=finished + running, current_request_number=2)
    reply2, code, details = call(server, "GetSuggestions", request)
    if algorithm in ("hyperband", "bohb"):
        # The first rung of the first bracket is still running: the service asks Katib to retry later.
        assert code in (grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE), details
        if code == grpc.StatusCode.UNAVAILABLE:
            assert "running trials finish" in details
            return
    assert code == grpc.StatusCode.OK, details
    second = [tuple(pairs(a)) for a in reply2.parameter_assignments]
    assert len(second) == 2 and len(set(second)) == 2
    assert not set(second) & {tuple(a) for a in first}
    # Same request, same answer (a restarted pod continues identically).
    reply3, _, _ = call(server, "GetSuggestions", request)
    assert reply3 == reply2


@pytest.mark.parametrize("algorithm,settings,parameters", ALGORITHMS, ids=[a for a, _, _ in ALGORITHMS])
def test_cached_study_answers_as_a_fresh_replay(algorithm: str, settings: Dict[str, str], parameters: Any) -> None:
    # The service keeps recent experiments' studies between calls (replace_trials keeps their searcher caches).
    # The first request of an experiment is a fresh replay; after other calls on the same experiment (more
    # trials, fewer trials) the same request must get the same answer from the cached study, over the wire
    # path the gRPC server uses as over the message path.
    svc = SuggestionService()
    exp = experiment(algorithm, settings, parameters, name=f"cache-{algorithm}")

    class Ctx:
        code = None

        def set_code(self, code: Any) -> None:
            self.code = code

        def set_details(self, details: str) -> None:
            pass

    def ask(trials: List[Any], count: int, wire: bool = False) -> List[List[Tuple[str, str]]]:
        req = pb.GetSuggestionsRequest(experiment=exp, trials=trials, current_request_number=count)
        ctx = Ctx()
        reply = svc.GetSuggestionsWire(req.SerializeToString(), ctx) if wire else svc.GetSuggestions(req, ctx)
        assert ctx.code is None
        return [pairs(a) for a in reply.parameter_assignments]

    first = ask([], 3)
    done = [trial(f"t{i}", a, pb.TrialStatus.SUCCEEDED, str(loss_of(dict(a)))) for i, a in enumerate(first)]
    mid = done[:2]
    exp.name = f"cache-{algorithm}-fresh"  # no study cached under this name: a fresh replay
    cold = ask(mid, 2)
    ask(done, 1)  # the cached study moves on to three trials ...
    assert ask(mid, 2) == cold  # ... and back
    assert ask(mid, 2, wire=True) == cold
    ask([], 3)
    assert ask(mid, 2, wire=True) == cold


def test_trials_are_replayed_in_start_order(server: Any) -> None:
    # Katib names trials <experiment>-<random suffix>; the service replays them by status.start_time (names
    # break ties), so the recency weights of TPE follow the order trials were suggested in. Renaming the trials
    # changes nothing while start times are given; without them the name order decides.
    exp = experiment("multivariate-tpe", {"n_startup_trials": "5"}, name="order")
    rng = __import__("random").Random(4)
    points = [[("lr", f"{10 ** rng.uniform(-4, -1):.6g}"), ("layers", str(rng.randint(1, 9))),
               ("drop", rng.choice(["0.1", "0.25", "0.5"])), ("opt", rng.choice(["sgd", "adam", "rms"]))]
              for _ in range(40)]

    def answer(names: List[str], timed: bool) -> List[List[Tuple[str, str]]]:
        trials = []
        for i, (name, p) in enumerate(zip(names, points)):
            t = trial(name, p, pb.TrialStatus.SUCCEEDED, str(loss_of(dict(p))))
            if timed:
                t.status.start_time = f"2026-12-01T10:{i // 60:02d}:{i % 60:02d}Z"
            trials.append(t)
        rng.shuffle(trials)  # Katib lists them in no fixed order
        reply, code, details = call(server, "GetSuggestions", pb.GetSuggestionsRequest(
            experiment=exp, trials=trials, current_request_number=2))
        assert code == grpc.StatusCode.OK, details
        return [pairs(a) for a in reply.parameter_assignments]

    in_order = [f"order-{i:03d}" for i in range(40)]
    scrambled = [f"order-{rng.getrandbits(32):08x}" for _ in range(40)]
    assert answer(scrambled, timed=True) == answer(in_order, timed=True)
    assert answer(in_order, timed=False) == answer(in_order, timed=True)
    assert answer(scrambled, timed=False) != answer(in_order, timed=True)


def test_hyperband_state_rides_in_algorithm_settings(server: Any) -> None:
    params = [pb.ParameterSpec(name="x", parameter_type=pb.DOUBLE, feasible_space=pb.FeasibleSpace(min="0", max="1")),
              pb.ParameterSpec(name="epochs", parameter_type=pb.INT, feasible_space=pb.FeasibleSpace(min="1", max="9"))]
    exp = experiment("hyperband", {"r_l": "9", "eta": "3", "resource_name": "epochs"}, params)
    brackets = kt.hyperband_brackets(9, 3)
    n0, budget0 = brackets[0]["rungs"][0]
    reply, code, details = call(server, "GetSuggestions", pb.GetSuggestionsRequest(experiment=exp,
                                                                                  current_request_number=n0))
    assert code == grpc.StatusCode.OK, details
    assert len(reply.parameter_assignments) == n0
    assert len(reply.algorithm.algorithm_settings) == n0
    for a in reply.parameter_assignments:
        assert dict(pairs(a))["epochs"] == str(int(budget0))
    for s in reply.algorithm.algorithm_settings:
        assert "hb_bracket=" in s.value and "hb_rung=0" in s.value


def test_validate_algorithm_settings_valid(server: Any) -> None:
    for algorithm, settings, parameters in ALGORITHMS:
        _, code, details = call(server, "ValidateAlgorithmSettings",
                                pb.ValidateAlgorithmSettingsRequest(experiment=experiment(algorithm, settings,
                                                                                          parameters)))
        assert code == grpc.StatusCode.OK, (algorithm, details)


# (algorithm, setting, valid value, invalid value): every setting Katib's services take under that name.
SETTINGS = [
    ("random", "random_state", "7", "-1"),
    ("grid", "random_state", "3", "x"),
    ("sobol", "random_state", "3", "1.5"),
    ("sobol", "scramble", "false", "maybe"),
    ("sobol", "skip", "4", "-2"),
    # hyperopt's TPE (Katib pkg/suggestion/v1beta1/hyperopt)
    ("tpe", "n_EI_candidates", "24", "abc"),
    ("tpe", "n_startup_jobs", "5", "-1"),
    ("tpe", "gamma", "0.25", "0"),
    ("tpe", "prior_weight", "1.0", "-0.5"),
    ("tpe", "random_state", "10", "-3"),
    # Optuna's multivariate TPE (Katib pkg/suggestion/v1beta1/optuna)
    ("multivariate-tpe", "n_startup_trials", "5", "five"),
    ("multivariate-tpe", "n_ei_candidates", "24", "0.5"),
    ("multivariate-tpe", "random_state", "1", "-1"),
    # scikit-optimize (Katib pkg/suggestion/v1beta1/skopt)
    ("bayesianoptimization", "base_estimator", "GP", "RF"),
    ("bayesianoptimization", "n_initial_points", "10", "-4"),
    ("bayesianoptimization", "acq_func", "gp_hedge", "nope"),
    ("bayesianoptimization", "acq_optimizer", "auto", "nope"),
    ("bayesianoptimization", "random_state", "10", "ten"),
    # Hyperband (Katib pkg/suggestion/v1beta1/hyperband)
    ("hyperband", "r_l", "9", "0"),
    ("hyperband", "eta", "3", "1"),
    ("hyperband", "resource_name", "layers", "missing"),
]


@pytest.mark.parametrize("algorithm,setting,good,bad", SETTINGS, ids=[f"{a}-{s}" for a, s, _, _ in SETTINGS])
def test_validate_algorithm_settings_each_setting(server: Any, algorithm: str, setting: str, good: str,
                                                  bad: str) -> None:
    base, parameters = next((s, p) for a, s, p in ALGORITHMS if a == algorithm)
    for value, ok in ((good, True), (bad, False)):
        settings = {**base, setting: value}
        _, code, details = call(server, "ValidateAlgorithmSettings", pb.ValidateAlgorithmSettingsRequest(
            experiment=experiment(algorithm, settings, parameters)))
        if ok:
            assert code == grpc.StatusCode.OK, (setting, value, details)
        else:
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (setting, value)
            assert setting in details or value in details, details


@pytest.mark.parametrize("algorithm,message", [
    ("cmaes", "unknown algorithm 'cmaes'"),
    ("", "unknown algorithm ''"),
])
def test_unknown_algorithm(server: Any, algorithm: str, message: str) -> None:
    _, code, details = call(server, "ValidateAlgorithmSettings",
                            pb.ValidateAlgorithmSettingsRequest(experiment=experiment(algorithm)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message in details
    _, code, details = call(server, "GetSuggestions",
                            pb.GetSuggestionsRequest(experiment=experiment(algorithm), current_request_number=1))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message in details


def test_unknown_setting_is_named(server: Any) -> None:
    _, code, details = call(server, "ValidateAlgorithmSettings", pb.ValidateAlgorithmSettingsRequest(
        experiment=experiment("random", {"randomstate": "1"})))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "randomstate" in details


def test_bad_space_and_trials_are_named(server: Any) -> None:
    bad_spaces = {
        "inverted": ([pb.ParameterSpec(name="x", parameter_type=pb.DOUBLE,
                                       feasible_space=pb.FeasibleSpace(min="2", max="1"))], "x"),
        "empty list": ([pb.ParameterSpec(name="c", parameter_type=pb.CATEGORICAL,
                                         feasible_space=pb.FeasibleSpace())], "'c'"),
        "log at zero": ([pb.ParameterSpec(name="lr", parameter_type=pb.DOUBLE, feasible_space=pb.FeasibleSpace(
            min="0", max="1", distribution=pb.LOG_UNIFORM))], "lr"),
        "no type": ([pb.ParameterSpec(name="x", feasible_space=pb.FeasibleSpace(min="0", max="1"))],
                    "UNKNOWN_TYPE"),
        "twice": ([pb.ParameterSpec(name="x", parameter_type=pb.DOUBLE, feasible_space=pb.FeasibleSpace(
            min="0", max="1"))] * 2, "'x' is declared twice"),
        "min not a number": ([pb.ParameterSpec(name="x", parameter_type=pb.INT, feasible_space=pb.FeasibleSpace(
            min="one", max="3"))], "x.min"),
    }
    for what, (params, needle) in bad_spaces.items():
        _, code, details = call(server, "GetSuggestions", pb.GetSuggestionsRequest(
            experiment=experiment("random", parameters=params), current_request_number=1))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, what
        assert needle in details, (what, details)
    good = [("lr", "0.01"), ("layers", "3"), ("drop", "0.1"), ("opt", "sgd")]
    bad_trials = {
        "missing parameter": (trial("t1", good[:3], pb.TrialStatus.SUCCEEDED, "1"), "'opt' is missing"),
        "out of range": (trial("t1", [("lr", "5"), *good[1:]], pb.TrialStatus.SUCCEEDED, "1"), "lr"),
        "not a choice": (trial("t1", [*good[:3], ("opt", "adagrad")], pb.TrialStatus.SUCCEEDED, "1"), "adagrad"),
        "metric text": (trial("t1", good, pb.TrialStatus.SUCCEEDED, "NaN-ish"), "'NaN-ish' is not a number"),
        "no metric": (trial("t1", good, pb.TrialStatus.SUCCEEDED), "without objective metric 'loss'"),
    }
    for what, (t, needle) in bad_trials.items():
        _, code, details = call(server, "GetSuggestions", pb.GetSuggestionsRequest(
            experiment=experiment("tpe"), trials=[t], current_request_number=1))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, what
        assert needle in details and "t1" in details, (what, details)
    for n in (-1, 10**6):
        _, code, details = call(server, "GetSuggestions", pb.GetSuggestionsRequest(
            experiment=experiment("random"), current_request_number=n))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "current_request_number" in details
    # Still serving.
    reply, code, _ = call(server, "GetSuggestions", pb.GetSuggestionsRequest(
        experiment=experiment("random"), trials=[trial("t1", good, pb.TrialStatus.SUCCEEDED, "1")],
        current_request_number=2))
    assert code == grpc.StatusCode.OK and len(reply.parameter_assignments) == 2


def test_states_map_like_katib(server: Any) -> None:
    """Failed, killed and metrics-unavailable trials are tried points without a value; grid skips them all."""
    params = [pb.ParameterSpec(name="a", parameter_type=pb.CATEGORICAL, feasible_space=pb.FeasibleSpace(list=["x", "y"])),
              pb.ParameterSpec(name="b", parameter_type=pb.CATEGORICAL, feasible_space=pb.FeasibleSpace(list=["u", "v"]))]
    exp = experiment("grid", parameters=params)
    conditions = [pb.TrialStatus.FAILED, pb.TrialStatus.KILLED, pb.TrialStatus.METRICSUNAVAILABLE]
    trials = [trial(f"t{i}", [("a", a), ("b", b)], c) for i, ((a, b), c) in
              enumerate(zip([("x", "u"), ("x", "v"), ("y", "u")], conditions))]
    reply, code, _ = call(server, "GetSuggestions", pb.GetSuggestionsRequest(experiment=exp, trials=trials,
                                                                            current_request_number=2))
    assert code == grpc.StatusCode.OK
    assert [pairs(a) for a in reply.parameter_assignments] == [[("a", "y"), ("b", "v")]]  # exhausted after one


def test_wire_reader_equals_message_conversion() -> None:
    """The C++ reader of the serialized request sees what the protobuf message says, field for field."""
    from kubetune import _kubetune
    from kubetune.katib.suggestion import experiment_to_dict, trial_to_dict

    exp = experiment("tpe", {"n_startup_jobs": "2", STATE_PREFIX + "ab": "x=1"}, objective=pb.MAXIMIZE)
    exp.spec.parameter_specs.parameters[0].feasible_space.step = "0.5"
    exp.spec.parameter_specs.parameters.append(pb.ParameterSpec(name="weird", parameter_type=7))  # unknown enum
    exp.spec.early_stopping.algorithm_name = "medianstop"  # fields the reader skips
    exp.spec.max_trial_count = 7
    trials = [trial("é-1", [("lr", "0.01"), ("opt", "adam")], pb.TrialStatus.SUCCEEDED, "1.5"),
              trial("t-2", [], pb.TrialStatus.EARLYSTOPPED), trial("t-3", [("x", "")], pb.TrialStatus.UNKNOWN)]
    trials[0].spec.labels["k"] = "v"
    trials[0].status.start_time = "2026-01-01T00:00:00Z"
    for n in (0, 3, -1, 2**31 - 1):
        req = pb.GetSuggestionsRequest(experiment=exp, trials=trials, current_request_number=n,
                                       total_request_number=9)
        got = _kubetune._katib.decode_suggestions_request(req.SerializeToString())
        want = {"experiment": experiment_to_dict(exp), "trials": [trial_to_dict(t) for t in trials], "count": n}
        want["experiment"]["parameters"][-1]["type"] = "7"
        assert got == want


@pytest.mark.parametrize("data", [b"\x0a\x05abc", b"\x0a", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
                                  b"\x0b", b"\x12\x02\x0a\xff"])
def test_wire_reader_rejects_malformed_bytes(data: bytes) -> None:
    from kubetune import _kubetune

    with pytest.raises(ValueError, match="malformed request"):
        _kubetune._katib.decode_suggestions_request(data)
