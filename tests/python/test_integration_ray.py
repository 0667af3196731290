"""kubetune.integrations.ray: KubetuneSearch as a Ray Tune searcher.

Unit tests of the space conversion and of save/restore run without Ray running; the Tuner tests start a local
two-CPU Ray instance once for the module (no dashboard, no file loggers, results under tmp_path).
"""
from __future__ import annotations

import json
import logging
import math
import os
import pickle
import re
import signal
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

ray = pytest.importorskip("ray")
tune = pytest.importorskip("ray.tune")

import kubetune as kt  # noqa: E402
from ray.tune.schedulers import ASHAScheduler  # noqa: E402
from ray.tune.search import ConcurrencyLimiter, Searcher  # noqa: E402

from kubetune.integrations.ray import KubetuneSearch, from_ray_space  # noqa: E402

BRANIN_MIN = 0.397887  # global minimum of Branin on [-5, 10] x [0, 15]
N_ITER = 4  # iterations per trial; the last one reports Branin itself


def branin(x1: float, x2: float) -> float:
    return ((x2 - 5.1 / (4 * math.pi**2) * x1**2 + 5 / math.pi * x1 - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x1) + 10)


def curve(config: Dict[str, Any], t: int) -> float:
    """Value at iteration t: decreases to Branin at t = N_ITER (same ranking at every rung)."""
    return branin(config["x1"], config["x2"]) + (N_ITER - t)


def branin_trainable(config: Dict[str, Any]) -> None:
    for t in range(1, N_ITER + 1):
        tune.report({"loss": curve(config, t)})


BRANIN_SPACE = {"x1": tune.uniform(-5.0, 10.0), "x2": tune.uniform(0.0, 15.0)}


# ---- space conversion (no Ray running) -------------------------------------------------------------------
def params_json(config: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {p["name"]: p for p in from_ray_space(config).to_json()["parameters"]}


def test_float_primitives_map_exactly() -> None:
    p = params_json({"u": tune.uniform(-1.0, 2.0), "lu": tune.loguniform(1e-4, 1e-1),
                     "qu": tune.quniform(0.3, 2.1, 0.3)})
    assert p["u"] == {"name": "u", "type": "double", "distribution": "uniform", "low": -1.0, "high": 2.0,
                      "step": 0.0}
    assert p["lu"] == {"name": "lu", "type": "double", "distribution": "log_uniform", "low": 1e-4,
                       "high": 1e-1, "step": 0.0}
    assert p["qu"] == {"name": "qu", "type": "double", "distribution": "uniform", "low": 0.3, "high": 2.1,
                       "step": 0.3}


def test_integer_primitives_exclusive_upper() -> None:
    p = params_json({"r": tune.randint(1, 5), "lr": tune.lograndint(1, 100), "qr": tune.qrandint(2, 20, 4),
                     "q1": tune.qrandint(0, 5, 1), "ql1": tune.qlograndint(1, 50, 1)})
    bounds = {k: (v["low"], v["high"], v["step"], v["distribution"]) for k, v in p.items()}
    assert bounds == {
        "r": (1, 4, 1, "uniform"),  # Ray: randint's upper is exclusive
        "lr": (1, 99, 1, "log_uniform"),
        "qr": (4, 20, 4, "uniform"),  # multiples of 4 inside [2, 20], upper included
        "q1": (0, 4, 1, "uniform"),  # q == 1 stays upper-exclusive in Ray
        "ql1": (1, 49, 1, "log_uniform"),
    }
    assert all(v["type"] == "int" for v in p.values())


@pytest.mark.parametrize("key, domain", [
    ("randint", tune.randint(-3, 4)),
    ("lograndint", tune.lograndint(2, 12)),
    ("qrandint", tune.qrandint(3, 29, 5)),
    ("qrandint_q1", tune.qrandint(0, 6, 1)),
    ("quniform", tune.quniform(0.3, 2.1, 0.3)),
    ("quniform_neg", tune.quniform(-1.0, 1.0, 0.25)),
    ("choice", tune.choice([1, "b", None, 2.5])),
])
def test_discrete_support_equals_rays(key: str, domain: Any) -> None:
    """The values kubetune can suggest are exactly the values Ray's own sampler draws."""
    search = KubetuneSearch(kt.GridSearch(), metric="m", mode="min", space={key: domain}, seed=0)
    ours = []
    for i in range(100):
        s = search.suggest(f"t{i}")
        if s == Searcher.FINISHED:
            break
        ours.append(s[key])
    assert s == Searcher.FINISHED
    theirs = domain.sample(size=4000, random_state=7)

    def canon(v: Any) -> Any:  # Ray's integer samplers return numpy ints
        if v is None or isinstance(v, (bool, str)):
            return (type(v).__name__, v)
        return ("number", round(float(v), 9) + 0.0)  # + 0.0: -0.0 -> 0.0

    assert sorted(map(canon, ours), key=repr) == sorted(set(map(canon, theirs)), key=repr)
    assert len(ours) == len(set(map(canon, ours)))


def test_choice_labels_and_values_round_trip() -> None:
    space = {"act": tune.choice(["relu", "tanh"]), "mixed": tune.choice([1, 2.5, None, True]),
             "obj": tune.choice([[1, 2], {"k": 1}])}
    p = params_json(space)
    assert p["act"]["choices"] == ["relu", "tanh"]
    assert p["mixed"]["choices"] == ["1", "2.5", "null", "true"]
    assert p["obj"]["choices"] == ["0", "1"]
    search = KubetuneSearch(kt.RandomSearch(dedupe=False), metric="m", mode="min", space=space, seed=3)
    seen: Dict[str, List[Any]] = {"act": [], "mixed": [], "obj": []}
    for i in range(60):
        config = search.suggest(str(i))
        for k in seen:
            seen[k].append(config[k])
        search.on_trial_complete(str(i), {"m": 1.0, "training_iteration": 1})
    assert {repr(v) for v in seen["mixed"]} == {"1", "2.5", "None", "True"}  # True stays a bool, 1 an int
    assert {type(v) for v in seen["mixed"]} == {int, float, type(None), bool}
    assert {json.dumps(v) for v in seen["obj"]} == {"[1, 2]", '{"k": 1}'}
    assert set(seen["act"]) == {"relu", "tanh"}


def test_nested_keys_flattened_and_constants_passed_through() -> None:
    space = {"opt": {"lr": tune.loguniform(1e-3, 1.0), "betas": [0.9, 0.99]},
             "model": {"depth": tune.randint(1, 4), "name": "mlp"}, "epochs": 3}
    assert from_ray_space(space).names == ["opt/lr", "model/depth"]
    search = KubetuneSearch(kt.TPE(), metric="m", mode="min", space=space, seed=1)
    config = search.suggest("a")
    trial = search.study.trials[0]
    assert config == {"opt": {"lr": trial.params["opt/lr"], "betas": [0.9, 0.99]},
                      "model": {"depth": trial.params["model/depth"], "name": "mlp"}, "epochs": 3}
    assert 1e-3 <= config["opt"]["lr"] <= 1.0 and config["model"]["depth"] in (1, 2, 3)


def test_kubetune_space_given_directly() -> None:
    space = kt.SearchSpace().add_float("net/dropout", 0.0, 0.5).add_categorical("net/act", ["relu", "gelu"])
    search = KubetuneSearch(kt.Sobol(seed=0), metric="acc", mode="max", space=space, seed=0)
    config = search.suggest("a")
    assert set(config) == {"net"} and set(config["net"]) == {"dropout", "act"}
    assert search.study.directions == ["maximize"]


@pytest.mark.parametrize("key, domain, words", [
    ("noise", tune.randn(0.0, 1.0), "Normal"),
    ("qnoise", tune.qrandn(0.0, 1.0, 0.5), "Normal"),
    ("fn", tune.sample_from(lambda spec: 1), "Function"),
    ("grid", tune.grid_search([1, 2]), "grid_search"),
    ("qlog", tune.qloguniform(1e-3, 1.0, 1e-3), "qloguniform"),
    ("qlogint", tune.qlograndint(2, 64, 2), "qlograndint"),
    ("empty_int", tune.randint(3, 3), "range"),
    ("in_list", [tune.uniform(0, 1)], "lists"),
    ("nested_choice", tune.choice([{"a": tune.uniform(0, 1)}, 2]), "tune.choice"),
])
def test_unsupported_primitives_rejected_with_key(key: str, domain: Any, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"'{key}'")) as info:
        KubetuneSearch(kt.TPE(), metric="m", mode="min", space={"outer": {"ok": 1}, key: domain})
    assert words in str(info.value)


def test_nested_rejection_names_the_flat_key() -> None:
    with pytest.raises(ValueError, match=re.escape("'model/noise'")):
        from_ray_space({"model": {"noise": tune.randn()}})
    with pytest.raises(ValueError, match=re.escape("'a/b'")):
        from_ray_space({"a/b": tune.uniform(0, 1), "a": {"b": tune.uniform(0, 1)}})


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="mode"):
        KubetuneSearch(kt.TPE(), metric="m", mode="minimize")
    with pytest.raises(TypeError, match="searcher"):
        KubetuneSearch(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="space"):
        KubetuneSearch(kt.TPE(), space=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        KubetuneSearch(kt.TPE(), seed=-1)
    with pytest.raises(RuntimeError, match="no search space"):
        KubetuneSearch(kt.TPE(), metric="m", mode="min").suggest("a")
    with pytest.raises(RuntimeError, match="metric and mode"):
        KubetuneSearch(kt.TPE(), space=BRANIN_SPACE).suggest("a")


def test_missing_metric_is_a_clear_error() -> None:
    search = KubetuneSearch(kt.TPE(), metric="loss", mode="min", space=BRANIN_SPACE, seed=0)
    search.suggest("a")
    search.on_trial_result("a", {"accuracy": 0.5, "training_iteration": 1})  # intermediate: skipped
    with pytest.raises(ValueError, match=r"trial a: metric 'loss' is missing from the result \(keys: \['acc"):
        search.on_trial_complete("a", {"accuracy": 0.5, "training_iteration": 2})
    assert search.study.trials[0].state == kt.TrialState.FAILED
    search.suggest("b")
    with pytest.raises(TypeError, match="'loss' must be a number"):
        search.on_trial_result("b", {"loss": "bad", "training_iteration": 1})


def test_set_search_properties() -> None:
    search = KubetuneSearch(kt.TPE(), seed=0)
    assert search.set_search_properties("loss", "max", {"x": tune.uniform(0, 1), "c": 7})
    assert (search.metric, search.mode) == ("loss", "max")
    assert search.suggest("a")["c"] == 7
    # A space given twice: Ray then raises its own "already instantiated with a search space" error.
    assert not search.set_search_properties(None, None, {"y": tune.uniform(0, 1)})
    assert search.set_search_properties("loss", "max", {"constant_only": 1})
    with pytest.raises(ValueError, match="mode 'min' from the Tuner conflicts with 'max'"):
        search.set_search_properties(None, "min", {})


def test_exhausted_space_finishes() -> None:
    search = KubetuneSearch(kt.GridSearch(), metric="m", mode="min", space={"n": tune.randint(0, 3)}, seed=0)
    got = [search.suggest(str(i)) for i in range(4)]
    assert got[:3] == [{"n": 0}, {"n": 1}, {"n": 2}] and got[3] == Searcher.FINISHED


def test_results_reach_the_study() -> None:
    search = KubetuneSearch(kt.TPE(), metric="loss", mode="min", space=BRANIN_SPACE, seed=0)
    a = search.suggest("a")
    search.suggest("b")
    for t in (1, 2, 3):
        search.on_trial_result("a", {"loss": curve(a, t), "training_iteration": t})
    # Stopped by a scheduler at t=3: Ray passes the last result (the one that triggered the stop).
    search.on_trial_complete("a", {"loss": curve(a, 3), "training_iteration": 3, "done": True})
    search.on_trial_complete("b", error=True)
    trials = search.study.trials
    assert trials[0].state == kt.TrialState.COMPLETE and trials[0].value == curve(a, 3)
    assert trials[0].intermediate_values == {1: curve(a, 1), 2: curve(a, 2), 3: curve(a, 3)}
    assert trials[1].state == kt.TrialState.FAILED
    # A trial Ray re-ran under a new id (restart_errored) is recorded from its flattened config.
    search.on_trial_complete("c", {"loss": 5.0, "config/x1": 1.0, "config/x2": 2.0})
    assert search.study.trials[2].params == {"x1": 1.0, "x2": 2.0} and search.study.trials[2].value == 5.0
    search.add_evaluated_point({"x1": 0.5, "x2": 0.5}, 7.0, intermediate_values=[9.0, 8.0, 7.0])
    assert search.study.trials[3].value == 7.0 and search.study.trials[3].intermediate_values[3] == 7.0
    search.add_evaluated_point({"x1": 0.5, "x2": 0.6}, None)
    search.add_evaluated_point({"x1": 0.5, "x2": 0.7}, 8.0, pruned=True, intermediate_values=[9.0])
    assert [t.state for t in search.study.trials[4:]] == [kt.TrialState.FAILED, kt.TrialState.PRUNED]
    with pytest.raises(ValueError, match="'x2' is missing"):
        search.add_evaluated_point({"x1": 0.5}, 1.0)


# ---- save / restore (no Ray running) ---------------------------------------------------------------------
RICH_SPACE = {"x": tune.uniform(-2.0, 2.0), "n": tune.randint(1, 9), "act": tune.choice(["relu", "tanh", None]),
              "sub": {"q": tune.quniform(0.0, 1.0, 0.125)}, "const": "keep"}


def drive(search: KubetuneSearch, ids: List[str]) -> List[Dict[str, Any]]:
    configs = []
    for tid in ids:
        config = search.suggest(tid)
        configs.append(config)
        search.on_trial_result(tid, {"loss": config["x"] ** 2 + 1.0, "training_iteration": 1})
        search.on_trial_complete(tid, {"loss": config["x"] ** 2 + config["n"] * 0.1, "training_iteration": 2})
    return configs


def test_save_restore_round_trip(tmp_path: Path) -> None:
    search = KubetuneSearch(kt.TPE(n_startup_trials=3), metric="loss", mode="min", space=RICH_SPACE, seed=11)
    drive(search, [f"t{i}" for i in range(6)])
    running = search.suggest("live")
    search.on_trial_result("live", {"loss": 3.0, "training_iteration": 1})
    path = tmp_path / "searcher-state.pkl"
    search.save(str(path))
    state = json.loads(path.read_text())  # plain JSON, no pickle
    assert state["format"] == "kubetune.ray_search" and state["trials"]["live"] == 6
    assert state["study"]["trials"][6]["state"] == "running"

    same_space = KubetuneSearch(kt.TPE(), space=RICH_SPACE)
    same_space.restore(str(path))
    no_space = KubetuneSearch(None)
    no_space.restore(str(path))  # the layout travels as JSON (choices and constants are JSON values)
    unpickled = pickle.loads(pickle.dumps(search))
    for other in (same_space, no_space, unpickled):
        assert other.study.to_json() == search.study.to_json()
        assert (other.metric, other.mode, other.trial_ids) == ("loss", "min", search.trial_ids)
    # Each continues exactly as the original: same next suggestions, bit for bit.
    nxt = drive(search, ["n1", "n2"])
    for other in (same_space, no_space, unpickled):
        assert drive(other, ["n1", "n2"]) == nxt
        other.on_trial_complete("live", {"loss": 2.5, "training_iteration": 2})
        assert other.study.trials[6].value == 2.5 and other.study.trials[6].intermediate_values == {1: 3.0, 2: 2.5}
    assert running["const"] == "keep" and nxt[0]["const"] == "keep"


def test_restore_needs_the_space_when_values_are_not_json(tmp_path: Path) -> None:
    space = {"shape": tune.choice([(1, 2), (3, 4)]), "x": tune.uniform(0.0, 1.0)}
    search = KubetuneSearch(kt.TPE(), metric="loss", mode="min", space=space, seed=1)
    first = search.suggest("a")
    assert isinstance(first["shape"], tuple)
    path = tmp_path / "state.json"
    search.save(str(path))
    with pytest.raises(ValueError, match="do not survive JSON"):
        KubetuneSearch(None).restore(str(path))  # tuples would come back as lists
    again = KubetuneSearch(None, space=space)
    again.restore(str(path))
    assert again.suggest("b") == search.suggest("b") and isinstance(again.suggest("c")["shape"], tuple)


def test_restore_refuses_mismatches(tmp_path: Path) -> None:
    search = KubetuneSearch(kt.TPE(), metric="loss", mode="min", space=RICH_SPACE, seed=1)
    drive(search, ["a"])
    path = tmp_path / "state.json"
    search.save(str(path))
    with pytest.raises(ValueError, match="different space"):
        KubetuneSearch(kt.TPE(), space=BRANIN_SPACE).restore(str(path))
    with pytest.raises(ValueError, match="saved mode 'min' differs"):
        KubetuneSearch(kt.TPE(), mode="max").restore(str(path))
    path.write_text("not json")
    with pytest.raises(ValueError, match="not a saved KubetuneSearch state"):
        KubetuneSearch(kt.TPE()).restore(str(path))
    path.write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="format='other'"):
        KubetuneSearch(kt.TPE()).restore(str(path))
    path.write_text(json.dumps({"format": "kubetune.ray_search", "version": 1, "study": None}))
    untouched = KubetuneSearch(kt.TPE(), space=BRANIN_SPACE, seed=4)
    with pytest.raises(ValueError, match="malformed saved state"):
        untouched.restore(str(path))
    assert untouched.study is None and untouched.space is not None


# ---- real Tuner runs on a local Ray instance -------------------------------------------------------------
RAY_ENV = {
    "RAY_DEDUP_LOGS": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_AIR_NEW_OUTPUT": "0",
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # no CSV/JSON/TensorBoard files per trial
    "TUNE_DISABLE_SIGINT_HANDLER": "1",
}


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGUSR1)}
    quiet = {n: logging.getLogger(n).level for n in ("ray", "ray.tune")}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in RAY_ENV.items():
            mp.setenv(k, v)
        # Workers import this module (and kubetune) to run the trainables: let them find both.
        paths = [str(Path(__file__).resolve().parent), str(Path(kt.__file__).resolve().parents[1])]
        mp.setenv("PYTHONPATH", os.pathsep.join(paths + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 object_store_memory=80 * 1024**2, logging_level=logging.ERROR)
        for n in quiet:
            logging.getLogger(n).setLevel(logging.ERROR)
        try:
            yield
        finally:
            ray.shutdown()
            for n, level in quiet.items():
                logging.getLogger(n).setLevel(level)
            for s, h in handlers.items():  # tune.run leaves its own handlers installed
                signal.signal(s, h)


def run_tuner(tmp_path: Path, name: str, search_alg: Searcher, num_samples: int, **tune_kw: Any) -> Any:
    tuner = tune.Tuner(
        branin_trainable,
        param_space=BRANIN_SPACE,
        tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=num_samples, search_alg=search_alg,
                                    reuse_actors=True, **tune_kw),
        run_config=tune.RunConfig(name=name, storage_path=str(tmp_path), verbose=0),
    )
    return tuner.fit()


def check_study_matches_results(search: KubetuneSearch, results: Any, n: int) -> List[Dict[str, Any]]:
    """Every Ray trial's config came from the study, and the study holds Ray's last result for it."""
    assert results.num_errors == 0 and len(results) == n
    study, ids = search.study, search.trial_ids
    assert len(study) == n and sorted(ids.values()) == list(range(n))
    configs = []
    for r in results:
        trial = study.trial(ids[r.metrics["trial_id"]])
        assert r.config == trial.params
        assert trial.state == kt.TrialState.COMPLETE and trial.value == r.metrics["loss"]
        steps = range(1, r.metrics["training_iteration"] + 1)
        assert trial.intermediate_values == {t: curve(r.config, t) for t in steps}
        configs.append(r.config)
    assert len({(c["x1"], c["x2"]) for c in configs}) == n
    return configs


def test_tuner_tpe_sequential_equals_inprocess_study(ray_local: None, tmp_path: Path) -> None:
    search = KubetuneSearch(kt.TPE(), seed=5)
    results = run_tuner(tmp_path, "seq", ConcurrencyLimiter(search, max_concurrent=1), 30)
    check_study_matches_results(search, results, 30)
    # One at a time, Tune's run is the plain ask/report/tell loop: an in-process study asks the same points.
    ref = kt.Study(kt.SearchSpace().add_float("x1", -5.0, 10.0).add_float("x2", 0.0, 15.0), kt.TPE(), seed=5)
    for _ in range(30):
        t = ref.ask()
        for step in range(1, N_ITER + 1):
            ref.report(t.id, step, curve(t.params, step))
        ref.tell(t.id, curve(t.params, N_ITER))
    assert [t.params for t in search.study.trials] == [t.params for t in ref.trials]
    best = results.get_best_result()
    assert best.metrics["loss"] == search.study.best_value == ref.best_value
    assert BRANIN_MIN <= best.metrics["loss"] < 3.0


def test_tuner_tpe_with_asha_and_concurrency(ray_local: None, tmp_path: Path) -> None:
    search = KubetuneSearch(kt.TPE(), seed=9)
    asha = ASHAScheduler(max_t=N_ITER, grace_period=1, reduction_factor=2)
    results = run_tuner(tmp_path, "asha", ConcurrencyLimiter(search, max_concurrent=2), 30, scheduler=asha)
    configs = check_study_matches_results(search, results, 30)
    iterations = sorted(r.metrics["training_iteration"] for r in results)
    assert iterations[0] < N_ITER and iterations[-1] == N_ITER  # ASHA stopped some, let some finish
    assert all(-5.0 <= c["x1"] <= 10.0 and 0.0 <= c["x2"] <= 15.0 for c in configs)
    full = [r.metrics["loss"] for r in results if r.metrics["training_iteration"] == N_ITER]
    assert BRANIN_MIN <= min(full) == search.study.best_value < 10.0


LOG_NAME = "runs.log"


def logged_trainable(config: Dict[str, Any]) -> None:
    with open(config["log"], "a", encoding="utf-8") as f:
        f.write(tune.get_context().get_trial_id() + "\n")
    branin_trainable(config)


class InterruptAfter(tune.Callback):
    """Sends Tune's stop signal (SIGUSR1, handled as Ctrl+C) once `after` trials completed, while another one
    is half-way (it reported iteration 2); only once per marker file, so the restored run is not interrupted."""

    def __init__(self, after: int, marker: str) -> None:
        self.after, self.marker, self.done = after, marker, 0

    def on_trial_complete(self, iteration: int, trials: List[Any], trial: Any, **info: Any) -> None:
        self.done += 1

    def on_trial_result(self, iteration: int, trials: List[Any], trial: Any, result: Dict[str, Any],
                        **info: Any) -> None:
        if self.done >= self.after and result.get("training_iteration") == 2 and not os.path.exists(self.marker):
            if signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, signal.SIG_IGN, None):
                raise RuntimeError("Tune's SIGUSR1 handler is not installed (tune.run not in the main thread?)")
            Path(self.marker).touch()
            os.kill(os.getpid(), signal.SIGUSR1)


def test_tuner_restore_continues_without_repeating(ray_local: None, tmp_path: Path) -> None:
    log, marker = tmp_path / LOG_NAME, tmp_path / "interrupted"
    space = dict(BRANIN_SPACE, log=str(log))
    search = KubetuneSearch(kt.TPE(n_startup_trials=4), seed=2)
    tuner = tune.Tuner(
        logged_trainable, param_space=space,
        tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=12, reuse_actors=True,
                                    search_alg=ConcurrencyLimiter(search, max_concurrent=2)),
        run_config=tune.RunConfig(name="exp", storage_path=str(tmp_path), verbose=0,
                                  callbacks=[InterruptAfter(5, str(marker))]),
    )
    first = tuner.fit()
    finished = {r.metrics["trial_id"]: r.config for r in first if r.metrics.get("done")}
    assert marker.exists() and 5 <= len(finished) < 12
    ran_before = log.read_text().split()
    half_way = set(ran_before) - set(finished)
    assert half_way  # at least the trial that reported iteration 2 when the signal came

    restored = tune.Tuner.restore(str(tmp_path / "exp"), trainable=logged_trainable, resume_unfinished=True)
    second = restored.fit()
    assert second.num_errors == 0 and len(second) == 12
    ran_after = log.read_text().split()[len(ran_before):]
    assert not set(ran_after) & set(finished)  # no finished trial ran again
    assert half_way <= set(ran_after)  # the interrupted ones ran again under their ids
    assert sorted(set(ran_before) | set(ran_after)) == sorted(r.metrics["trial_id"] for r in second)
    by_id = {r.metrics["trial_id"]: r for r in second}
    assert all(by_id[tid].config == c for tid, c in finished.items())
    assert len({(r.config["x1"], r.config["x2"]) for r in second}) == 12

    # The searcher state Tune saved holds one study of all 12, continued across the restore.
    final = KubetuneSearch(None, space=space)
    final.restore_from_dir(str(tmp_path / "exp"))
    study, ids = final.study, final.trial_ids
    assert sorted(ids) == sorted(by_id) and len(study) == 12
    for tid, r in by_id.items():
        trial = study.trial(ids[tid])
        assert trial.state == kt.TrialState.COMPLETE and trial.value == r.metrics["loss"]
        assert {**trial.params, "log": str(log)} == r.config
    assert study.to_json()["ask_counter"] == 12
