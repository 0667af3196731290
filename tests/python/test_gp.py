"""GP Bayesian optimisation (kt.GP, kubetune._kubetune.gp): maths vs numpy, behaviour on benchmarks, settings."""
import math

import numpy as np
import pytest

import kubetune as kt

gpmod = kt._native.gp


def matern52(A, B, ls, s2):
    """Independent numpy Matérn-5/2 ARD kernel (Rasmussen & Williams eq. 4.17)."""
    D = (A[:, None, :] - B[None, :, :]) / ls
    r = np.sqrt((D ** 2).sum(-1))
    return s2 * (1 + math.sqrt(5) * r + 5.0 / 3.0 * r ** 2) * np.exp(-math.sqrt(5) * r)


def rbf(A, B, ls, s2):
    D = (A[:, None, :] - B[None, :, :]) / ls
    return s2 * np.exp(-0.5 * (D ** 2).sum(-1))


def small_model(kernel):
    rng = np.random.default_rng(0)
    X = rng.random((9, 2))
    y = 3.0 + np.sin(4 * X[:, 0]) - X[:, 1] ** 2 + 0.01 * rng.standard_normal(9)
    gp = gpmod.GaussianProcess(2, kernel=kernel)
    ls = np.array([0.4, 0.8])
    gp.params = np.array([math.log(ls[0]), math.log(ls[1]), math.log(1.3), math.log(0.01), 0.2])
    gp.set_data(X, y)
    return gp, X, y, ls


@pytest.mark.parametrize("kernel,kfun", [("matern52", matern52), ("rbf", rbf)])
def test_posterior_matches_numpy(kernel, kfun):
    gp, X, y, ls = small_model(kernel)
    Q = np.random.default_rng(1).random((25, 2))
    mu, var = gp.predict(Q)
    ym, ys = y.mean(), y.std()
    z = (y - ym) / ys
    K = kfun(X, X, ls, 1.3) + 0.01 * np.eye(len(X))
    Ks = kfun(X, Q, ls, 1.3)
    alpha = np.linalg.solve(K, z - 0.2)
    mu_ref = (0.2 + Ks.T @ alpha) * ys + ym
    var_ref = (1.3 - np.einsum("ij,ij->j", Ks, np.linalg.solve(K, Ks))) * ys ** 2
    np.testing.assert_allclose(mu, mu_ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(var, var_ref, rtol=0, atol=1e-9)
    # Log marginal likelihood vs the textbook formula.
    lml, grad = gp.log_marginal_likelihood()
    sign, logdet = np.linalg.slogdet(K)
    ref = -0.5 * (z - 0.2) @ alpha - 0.5 * logdet - 0.5 * len(X) * math.log(2 * math.pi)
    assert lml == pytest.approx(ref, abs=1e-9)
    # Gradient vs central differences, with Optuna's prior included.
    _, g = gp.log_marginal_likelihood("optuna")
    theta = gp.params
    for j in range(len(theta)):
        h = 1e-5
        tp, tm = theta.copy(), theta.copy()
        tp[j] += h
        tm[j] -= h
        gp.params = tp
        fp = gp.log_marginal_likelihood("optuna")[0]
        gp.params = tm
        fm = gp.log_marginal_likelihood("optuna")[0]
        gp.params = theta
        assert g[j] == pytest.approx((fp - fm) / (2 * h), rel=1e-5, abs=1e-6)


def test_rank_one_update_and_fit():
    gp, X, y, _ = small_model("matern52")
    before = gp.log_marginal_likelihood("optuna")[0]
    after = gp.fit(prior="optuna", seed=1)
    assert after > before
    x_new = np.array([0.5, 0.5])
    mu0, var0 = gp.predict(x_new[None, :])
    gp.add_observation(x_new, 1.0)
    mu1, var1 = gp.predict(x_new[None, :])
    assert var1[0] < var0[0]
    assert gp.size == 10


def test_log_ei_stable():
    for z in np.linspace(-30, 6, 200):
        ei = gpmod.expected_improvement(-z, 1.0, 0.0)
        assert gpmod.log_expected_improvement(-z, 1.0, 0.0) == pytest.approx(math.log(ei), rel=1e-9, abs=1e-9)
    for z in (-50.0, -1e3, -1e6):
        assert gpmod.expected_improvement(-z, 1.0, 0.0) == 0.0
        v = gpmod.log_expected_improvement(-z, 1.0, 0.0)
        assert math.isfinite(v) and v < -1000


def _best(searcher, f, n, seed):
    study = kt.Study(f.space(), searcher=searcher, seed=seed)
    study.optimize(lambda t: f(t.params), n_trials=n)
    return study.best_value


@pytest.mark.parametrize("name", ["branin", "hartmann6"])
def test_gp_beats_random_and_tpe(name):
    f = kt.functions.get(name)
    seeds = range(1, 6)
    gp = np.median([_best(kt.GP(), f, 50, s) for s in seeds])
    rnd = np.median([_best(kt.RandomSearch(), f, 50, s) for s in seeds])
    assert gp < rnd
    assert gp - f.optimum < (0.05 if name == "branin" else 0.35)
    if hasattr(kt, "TPE"):
        tpe = np.median([_best(kt.TPE(), f, 50, s) for s in seeds])
        assert gp < tpe


def test_batch_distinct_and_save_load(tmp_path):
    s = kt.SearchSpace().add_float("lr", 1e-4, 1e-1, log=True).add_int("units", 8, 64).add_categorical(
        "act", ["relu", "tanh"])

    def obj(p):
        return (math.log10(p["lr"]) + 2.5) ** 2 + abs(p["units"] - 40) / 40 + (p["act"] == "tanh")

    study = kt.Study(s, searcher=kt.GP(n_initial_points=6), seed=4)
    study.optimize(lambda t: obj(t.params), n_trials=12)
    batch = study.ask(6)
    keys = {tuple(t.params.values()) for t in batch}
    assert len(keys) == 6
    done = {tuple(t.params.values()) for t in study.trials if t.state == kt.TrialState.COMPLETE}
    assert not keys & done
    for t in batch:
        study.tell(t, obj(t.params))
    path = str(tmp_path / "gp.json")
    study.save(path)
    other = kt.Study.load(path)
    for _ in range(3):
        a, b = study.ask(), other.ask()
        assert a.params == b.params
        study.tell(a, obj(a.params))
        other.tell(b, obj(b.params))


def test_katib_settings_and_errors():
    g = kt.GP.from_katib([{"name": "base_estimator", "value": "GP"}, {"name": "n_initial_points", "value": "3"},
                          {"name": "acq_func", "value": "gp_hedge"}, {"name": "acq_optimizer", "value": "sampling"},
                          {"name": "random_state", "value": "7"}])
    c = g.config()
    assert c["n_initial_points"] == 3 and c["acq_func"] == "gp_hedge" and c["n_refine"] == 0
    assert c["seed"] == 7
    via_registry = kt.make_searcher({"type": "bayesianoptimization", "n_initial_points": "4"})
    assert via_registry.config()["n_initial_points"] == 4
    assert "gp" in kt.registered_searchers() and "bayesianoptimization" in kt.registered_searchers()
    with pytest.raises(ValueError, match="base_estimator"):
        kt.GP.from_katib({"base_estimator": "RF"})
    with pytest.raises(ValueError, match="kernel"):
        kt.GP(kernel="linear")
    with pytest.raises(ValueError, match="bogus"):
        kt.make_searcher({"type": "gp", "bogus": 1})
    with pytest.raises(ValueError, match="n_candidates"):
        kt.GP(n_candidates=0)
    with pytest.raises(ValueError, match="columns"):
        gpmod.GaussianProcess(2).set_data(np.zeros((3, 3)), np.zeros(3))


def test_refit_schedule_and_defaults():
    """Hyperparameters are refitted once the history has grown by max(1, n_fit // refit_scale) (stored as
    gp_fit_n on each suggestion); a study reloaded before every ask proposes exactly the same points."""
    g = kt.GP()
    c = g.config()
    assert (c["n_candidates"], c["n_refine"], c["refit_scale"]) == (512, 3, 10)
    f = kt.functions.get("hartmann6")
    a = kt.Study(f.space(), searcher=kt.GP(n_threads=1, refit_scale=4, n_candidates=128), seed=3)
    b = kt.Study.from_json(a.to_json())
    last = None
    reused = 0
    for _ in range(30):
        b = kt.Study.from_json(b.to_json())  # fresh searcher: no cached factorisation
        ta, tb = a.ask(), b.ask()
        assert ta.params == tb.params and ta.system_attrs == tb.system_attrs
        n_done = len(a.trials) - 1
        fit_n = ta.system_attrs.get("gp_fit_n")
        if fit_n is not None:
            if last is None or n_done >= last + max(1, int(last) // 4):
                assert fit_n == n_done
            else:
                assert fit_n == last
                reused += 1
            last = fit_n
        v = f(ta.params)
        a.tell(ta, v)
        b.tell(tb, v)
    assert reused >= 10


class _Context:
    """The ServicerContext methods the Katib servicer calls on errors."""

    def set_code(self, code):
        raise AssertionError(f"servicer answered {code}")

    def set_details(self, details):
        raise AssertionError(details)


def _katib_request(pb, points, running, settings=()):
    """Katib's GetSuggestionsRequest for 4 DOUBLE parameters in [-5, 5]: SUCCEEDED trials with a sphere loss,
    RUNNING trials given by their assignment text, current_request_number 3."""
    req = pb.GetSuggestionsRequest(current_request_number=3)
    exp = req.experiment
    exp.name = "gp-replay"
    exp.spec.algorithm.algorithm_name = "bayesianoptimization"
    for name, value in settings:
        exp.spec.algorithm.algorithm_settings.add(name=name, value=value)
    exp.spec.objective.type = pb.MINIMIZE
    exp.spec.objective.objective_metric_name = "loss"
    for i in range(4):
        p = exp.spec.parameter_specs.parameters.add(name=f"x{i}", parameter_type=pb.DOUBLE)
        p.feasible_space.min, p.feasible_space.max = "-5", "5"
    for k, values in enumerate([[repr(v) for v in x] for x in points] + running):
        t = req.trials.add(name=f"gp-replay-{k:04d}")
        t.spec.objective.objective_metric_name = "loss"
        for i, v in enumerate(values):
            t.spec.parameter_assignments.assignments.add(name=f"x{i}", value=v)
        if k < len(points):
            t.status.condition = pb.TrialStatus.SUCCEEDED
            t.status.observation.metrics.add(name="loss", value=repr(float(np.sum((np.asarray(points[k]) - 1) ** 2))))
        else:
            t.status.condition = pb.TrialStatus.RUNNING
    return req


def test_katib_answer_is_a_function_of_the_request():
    """Katib replays every trial on every call: the GP's answer must depend on the request alone, whether the
    service answers from a study it kept (its factorisation reused) or from a fresh replay (a restarted pod),
    and on 1 or 2 threads. 150 SUCCEEDED trials (several Cholesky panels, the branch-and-bound variance
    search, refinement), 3 RUNNING ones and the model state merged as Katib's controller merges it."""
    pb = pytest.importorskip("kubeflow.katib.katib_api_pb2")
    from kubetune.katib import SuggestionService

    service = SuggestionService()
    points = np.random.default_rng(5).uniform(-5, 5, (150, 4)).tolist()
    first = service.GetSuggestions(_katib_request(pb, points, []), _Context())
    running = [[a.value for a in pa.assignments] for pa in first.parameter_assignments]
    state = [(s.name, s.value) for s in first.algorithm.algorithm_settings]
    assert [name for name, _ in state] == ["kubetune.state/model"]

    def answer(threads, svc=service):
        req = _katib_request(pb, points, running, state + [("threads", str(threads))])
        reply = svc.GetSuggestions(req, _Context())
        return [tuple(a.value for a in pa.assignments) for pa in reply.parameter_assignments]

    def evict():  # other experiments push the kept studies out (the service keeps a few recent ones)
        for k in range(40):
            req = _katib_request(pb, points[:3], [])
            req.experiment.name = f"gp-replay-other-{k}"
            service.GetSuggestions(req, _Context())

    warm = [answer(1), answer(1)]  # the first after another history of this experiment, then a repeat
    assert len(set(warm[0])) == 3 and not set(warm[0]) & {tuple(r) for r in running}
    evict()
    assert answer(1, SuggestionService()) == warm[0] == warm[1]
    evict()
    assert answer(2) == warm[0]


def test_settings_table_names_and_deprecations():
    schema = {e["name"]: e for e in kt.GP._settings_schema()}
    assert schema["n_threads"]["deprecated"] == ["threads"] and schema["seed"]["aliases"] == ["random_state"]
    assert {k: e["default"] for k, e in schema.items()} == {k: v for k, v in kt.GP().config().items() if k != "type"}
    with pytest.warns(DeprecationWarning, match=r"GP\(threads=...\) is deprecated; use n_threads"):
        g = kt.GP(threads=2)
    assert g.config()["n_threads"] == 2 and "threads" not in g.config()
    # Saved configs with the old names still load, silently (C++ reads the alias).
    old = {"type": "gp", "threads": 3, "random_state": 5}
    assert kt.make_searcher(old).config() == kt.GP(n_threads=3, seed=5).config()
    # GP used to read 2 as true: the one boolean rule refuses it, naming the setting.
    with pytest.raises(ValueError, match="'warm_start' = 2 is not a boolean"):
        kt.make_searcher({"type": "gp", "warm_start": 2})
    with pytest.raises(ValueError, match="'deterministic_objective' = \"yes\""):
        kt.GP.from_katib({"deterministic_objective": "yes"})
    with pytest.raises(ValueError, match="gp: setting 'n_candidates' = 0 must be >= 1"):
        kt.GP(n_candidates=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_startup'"):
        kt.GP(n_startup=3)
