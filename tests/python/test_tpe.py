"""kt.TPE: settings (Optuna defaults, hyperopt preset, Katib names), quality vs random, batches, save/load."""
import math

import numpy as np
import pytest

import kubetune as kt


def branin(p):
    x1, x2 = p["x1"], p["x2"]
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


def branin_space():
    return kt.SearchSpace().add_float("x1", -5, 10).add_float("x2", 0, 15)


def best_of(searcher, seed, n=100):
    study = kt.Study(branin_space(), searcher=searcher, seed=seed)
    for _ in range(n):
        t = study.ask()
        study.tell(t, branin(t.params))
    return study.best.value


def test_defaults_are_optunas():
    t = kt.TPE()
    c = t.config()
    assert c["type"] == "tpe"
    assert (c["n_startup_trials"], c["n_ei_candidates"], c["prior_weight"]) == (10, 24, 1.0)
    assert c["consider_magic_clip"] and not c["consider_endpoints"] and not c["multivariate"]
    assert [t.n_below(n) for n in (0, 10, 11, 100, 1000)] == [0, 1, 2, 10, 25]
    h = kt.TPE.hyperopt()
    assert h.n_startup_trials == 20
    assert h.n_below(100) == 3  # ceil(0.25 * sqrt(100))
    # kubetune's candidate refinement (multivariate): on by default, off in the Optuna and hyperopt presets.
    assert (t.n_refine_candidates, c["refine_scale"]) == (8, 0.25)
    assert kt.TPE.optuna().n_refine_candidates == 0 and h.n_refine_candidates == 0
    assert kt.TPE.optuna(multivariate=True).config()["multivariate"] is True


def test_katib_settings_and_round_trip():
    t = kt.TPE.from_katib({"n_startup_trials": "5", "n_ei_candidates": "12", "random_state": "3",
                           "gamma": "0.2", "prior_weight": "2"})
    c = t.config()
    assert (c["n_startup_trials"], c["n_ei_candidates"], c["seed"], c["gamma"], c["prior_weight"]) == (
        5, 12, 3, 0.2, 2.0)
    mv = kt.TPE.from_katib([{"name": "n_startup_trials", "value": "7"}], multivariate=True)
    assert mv.multivariate and mv.n_startup_trials == 7
    assert kt.make_searcher({"type": "multivariate-tpe"}).config()["multivariate"] is True
    assert kt.make_searcher(t.config()).config() == c


@pytest.mark.parametrize("settings,needle", [({"n_startup_trial": 3}, "n_startup_trial"),
                                             ({"gamma": "abc"}, "gamma"),
                                             ({"prior_weight": 0}, "prior_weight"),
                                             ({"n_ei_candidates": 0}, "n_ei_candidates"),
                                             ({"refine_scale": "-1"}, "refine_scale")])
def test_bad_settings_raise_value_error_naming_the_key(settings, needle):
    with pytest.raises(ValueError, match=needle):
        kt.TPE.from_katib(settings)


def test_bad_keyword_raises():
    with pytest.raises(ValueError, match="gamma_rule"):
        kt.TPE(gamma_rule="cubic")
    with pytest.raises(ValueError, match="bandwidth"):
        kt.TPE(bandwidth="silverman")
    with pytest.raises(TypeError):
        kt.TPE(10)  # keyword-only
    assert kt.TPE(multivariate=True, bandwidth="scott").config()["bandwidth"] == "scott"
    with pytest.raises(ValueError, match="refine_scale"):
        kt.TPE(refine_scale=0.0)
    with pytest.raises(ValueError, match="'n_refine_candidates' = -1 must be a non-negative integer"):
        kt.TPE(n_refine_candidates=-1)  # not a count
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_candidates'"):
        kt.TPE(n_candidates=5)  # a GP setting
    with pytest.raises(TypeError, match="'gamma' must be float"):
        kt.TPE(gamma="0.2")  # Katib's strings are for from_katib


def test_settings_come_from_one_table():
    schema = {e["name"]: e for e in kt.TPE._settings_schema()}
    assert list(schema)[:3] == ["n_startup_trials", "n_ei_candidates", "n_refine_candidates"]
    assert schema["seed"]["aliases"] == ["random_state"] and schema["seed"]["default"] is None
    assert schema["n_ei_candidates"]["min"] == 1 and schema["gamma"]["above"] == 0
    assert schema["gamma_rule"]["choices"] == ["linear", "sqrt"] and schema["gamma_rule"]["exact"]
    # Defaults in the table are the struct's: a TPE built without arguments writes exactly them.
    assert {k: e["default"] for k, e in schema.items()} == {k: v for k, v in kt.TPE().config().items() if k != "type"}
    assert "n_ei_candidates: int = 24." in kt.TPE.__doc__ and "Also accepted as random_state." in kt.TPE.__doc__
    # seed and Katib's random_state are one setting.
    assert kt.TPE(seed=4).config() == kt.TPE(random_state=4).config() == kt.TPE.from_katib({"random_state": "4"}).config()
    with pytest.raises(ValueError, match="given twice"):
        kt.TPE.from_katib({"seed": "1", "random_state": "2"})
    assert kt.TPE.hyperopt(gamma=0.3).config()["gamma_rule"] == "sqrt"
    # One boolean rule: true/false, 0/1, "true"/"false"/"True"/"False"/"1"/"0"; "yes" is refused, naming the key.
    assert kt.TPE.from_katib({"multivariate": "True"}).multivariate
    with pytest.raises(ValueError, match="'multivariate' = \"yes\" is not a boolean"):
        kt.TPE.from_katib({"multivariate": "yes"})


def test_beats_random_on_branin():
    tpe = [best_of(kt.TPE(), s) - 0.397887 for s in range(12)]
    rnd = [best_of(kt.RandomSearch(), s) - 0.397887 for s in range(12)]
    assert np.median(tpe) < 0.5 * np.median(rnd), (np.median(tpe), np.median(rnd))


def test_batch_of_eight_is_distinct_and_liars_keep_batches_apart():
    study = kt.Study(branin_space(), searcher=kt.TPE(multivariate=True), seed=4)
    for _ in range(20):
        t = study.ask()
        study.tell(t, branin(t.params))
    b1 = study.ask(8)
    b2 = study.ask(8)
    pts = {(t.params["x1"], t.params["x2"]) for t in b1 + b2}
    assert len(b1) == 8 and len(pts) == 16


def test_small_discrete_space_batch_has_no_repeats():
    space = kt.SearchSpace().add_int("a", 0, 3).add_categorical("b", ["x", "y", "z"])
    study = kt.Study(space, searcher=kt.TPE(n_startup_trials=4), seed=0)
    seen = set()
    for _ in range(3):
        for t in study.ask(4):
            key = (t.params["a"], t.params["b"])
            assert key not in seen
            seen.add(key)
            study.tell(t, t.params["a"])


def test_save_load_continues_identically(tmp_path):
    space = (kt.SearchSpace().add_float("lr", 1e-5, 1e-1, log=True).add_int("layers", 1, 6)
             .add_categorical("opt", ["sgd", "adam"]).add_float("momentum", 0.0, 0.99)
             .set_condition("momentum", "opt", ["sgd"]))

    def f(p):
        return (math.log10(p["lr"]) + 3) ** 2 + abs(p["layers"] - 3) * 0.1 + p.get("momentum", 0.5)

    a = kt.Study(space, searcher=kt.TPE(), seed=7)
    for i in range(25):
        t = a.ask()
        if i % 6 == 5:
            a.tell(t, state="failed")
        else:
            a.tell(t, f(t.params))
    a.ask(2)  # left running across the save
    path = str(tmp_path / "study.json")
    a.save(path)
    b = kt.Study.load(path)
    for _ in range(15):
        ta, tb = a.ask(), b.ask()
        assert ta.params == tb.params
        a.tell(ta, f(ta.params))
        b.tell(tb, f(tb.params))


def test_conditional_parameters_only_when_active():
    space = (kt.SearchSpace().add_categorical("model", ["svm", "tree"]).add_float("C", 1e-3, 1e3, log=True)
             .add_int("depth", 1, 12).set_condition("C", "model", ["svm"]).set_condition("depth", "model", ["tree"]))
    study = kt.Study(space, searcher=kt.TPE(multivariate=True), seed=2)
    for _ in range(40):
        t = study.ask()
        assert ("C" in t.params) == (t.params["model"] == "svm")
        assert ("depth" in t.params) == (t.params["model"] == "tree")
        study.tell(t, abs(t.params.get("depth", 20) - 5))
    assert study.best.value <= 1
