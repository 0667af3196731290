"""Python layer of the basic searchers (RandomSearch, GridSearch, Sobol) and kt.functions."""
import importlib.util
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import kubetune as kt


# ----------------------------------------------------------------------------------------------- functions
def test_function_names_and_optima():
    names = kt.functions.names()
    assert len(names) == 10 and "branin" in names and "styblinski_tang" in names
    for name in names:
        f = kt.functions.get(name)
        assert f.name == name
        assert len(f.bounds) == f.dim == len(f.argmin)
        assert f(np.asarray(f.argmin)) == pytest.approx(f.optimum, abs=1e-9)
        # The dict form and a batch give the same numbers.
        d = {f"x{i}": v for i, v in enumerate(f.argmin)}
        assert f(d) == pytest.approx(f.optimum, abs=1e-9)


def test_published_values():
    assert kt.functions.branin({"x0": math.pi, "x1": 2.275}) == pytest.approx(0.397887, abs=1e-6)
    assert kt.functions.hartmann6.optimum == pytest.approx(-3.32237, abs=1e-5)
    assert kt.functions.goldstein_price([0.0, -1.0]) == pytest.approx(3.0)
    assert kt.functions.get("Six-Hump-Camel").optimum == pytest.approx(-1.0316, abs=1e-4)
    assert kt.functions.get("styblinski_tang", 10).optimum == pytest.approx(-391.66, abs=0.01)


def test_batch_evaluation_and_dimension_adaptation():
    f = kt.functions.rosenbrock
    X = np.random.default_rng(0).uniform(-2, 2, size=(1000, 5))
    out = f(X)
    assert out.shape == (1000,)
    ref = np.sum(100 * (X[:, 1:] - X[:, :-1] ** 2) ** 2 + (X[:, :-1] - 1) ** 2, axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    assert f(np.ones(7)) == 0.0  # families adapt to the input's dimension
    assert kt.functions.ackley.with_dim(4).dim == 4
    assert len(kt.functions.ackley.space(8)) == 8
    with pytest.raises(ValueError, match="coordinates"):
        kt.functions.branin(np.zeros(3))
    with pytest.raises(ValueError, match="x1"):
        kt.functions.branin({"x0": 1.0})
    with pytest.raises(KeyError):
        kt.functions.get("nope")
    with pytest.raises(TypeError):
        kt.functions.branin("abc")


def test_function_space_is_a_search_space():
    s = kt.functions.branin.space()
    assert isinstance(s, kt.SearchSpace) and s.names == ["x0", "x1"]


# ----------------------------------------------------------------------------------------------- searchers
def test_searcher_configs_round_trip():
    for s in (kt.RandomSearch(dedupe=False), kt.GridSearch(default_points=4, points={"a": 3}, shuffle=True, seed=2),
              kt.Sobol(seed=5, scramble=False, skip=1)):
        assert isinstance(s, kt.Searcher)
        cfg = s.config()
        assert kt.make_searcher(cfg).config() == cfg
    assert kt.Sobol.from_katib([{"name": "random_state", "value": "9"}]).config()["seed"] == 9
    assert kt.GridSearch.from_katib({"random_state": "3"}).config()["shuffle"] is True
    with pytest.raises(ValueError, match="unknown setting 'bogus'"):
        kt.GridSearch.from_katib({"bogus": "1"})
    with pytest.raises(TypeError):
        kt.Sobol(3)  # keyword-only


def test_grid_study_enumerates_and_exhausts():
    s = kt.SearchSpace()
    s.add_int("n", 1, 3).add_categorical("opt", ["sgd", "adam"]).add_float("lr", 0.1, 0.3, step=0.1)
    study = kt.Study(s, searcher=kt.GridSearch())
    seen = []
    while True:
        batch = study.ask(4)
        seen += [tuple(sorted(t.params.items())) for t in batch]
        for t in batch:
            study.tell(t.id, t.params["n"] + t.params["lr"])
        if len(batch) < 4:
            break
    assert len(seen) == len(set(seen)) == 3 * 2 * 3
    assert study.exhausted
    with pytest.raises(kt.SearchExhausted, match="exhausted"):
        study.ask()
    # optimize stops early on an exhausted grid instead of failing or repeating.
    small = kt.Study(kt.SearchSpace().add_int("k", 0, 4), searcher=kt.GridSearch())
    small.optimize(lambda t: t.params["k"], n_trials=50)
    assert len(small.trials) == 5
    assert study.best.params["n"] == 1 and study.best.params["lr"] == pytest.approx(0.1)
    assert kt.GridSearch().grid_size(s) == 18
    first = kt.GridSearch().enumerate(s)[:2]
    assert first == [{"n": 1, "opt": "sgd", "lr": 0.1}, {"n": 1, "opt": "sgd", "lr": pytest.approx(0.2)}]


def test_grid_errors_name_the_parameter():
    s = kt.SearchSpace().add_float("lr", 1e-4, 1e-1, log=True)
    with pytest.raises(ValueError, match="'lr'"):
        kt.Study(s, searcher=kt.GridSearch())
    study = kt.Study(s, searcher=kt.GridSearch(points={"lr": 4}))
    vals = [t.params["lr"] for t in study.ask(10)]
    np.testing.assert_allclose(vals, [1e-4, 1e-3, 1e-2, 1e-1], rtol=1e-12)
    big = kt.SearchSpace()
    for i in range(8):
        big.add_int(f"p{i}", 1, 10)
    with pytest.raises(ValueError, match="max_grid_size"):
        kt.Study(big, searcher=kt.GridSearch())


def test_grid_conditional_space_and_reload(tmp_path):
    s = kt.SearchSpace()
    s.add_categorical("opt", ["sgd", "adam"]).add_float("momentum", 0.0, 0.9, step=0.45)
    s.set_condition("momentum", "opt", ["sgd"])
    g = kt.GridSearch()
    pts = g.enumerate(s)
    assert pts == [{"opt": "sgd", "momentum": 0.0}, {"opt": "sgd", "momentum": 0.45},
                   {"opt": "sgd", "momentum": 0.9}, {"opt": "adam"}]
    study = kt.Study(s, searcher=g)
    t = study.ask(2)
    path = tmp_path / "grid.json"
    study.save(str(path))
    again = kt.Study.load(str(path))
    assert [x.params for x in again.ask(5)] == pts[2:]


def test_sobol_study_is_deterministic_and_fills_space():
    f = kt.functions.get("branin")
    runs = []
    for _ in range(2):
        study = kt.Study(f.space(), searcher=kt.Sobol(seed=3))
        study.optimize(lambda t: f(t.params), n_trials=64)
        runs.append([tuple(t.params.values()) for t in study.trials])
    assert runs[0] == runs[1]
    X = np.array(runs[0])
    lo, hi = np.array(f.bounds).T
    U = (X - lo) / (hi - lo)
    for j in range(2):  # 64 = 2^6 scrambled points: one per 1/64 slice in each coordinate
        assert sorted(np.floor(U[:, j] * 64).astype(int).tolist()) == list(range(64))
    # Different seed, different points.
    other = kt.Study(f.space(), searcher=kt.Sobol(seed=4))
    assert tuple(other.ask().params.values()) != runs[0][0]


def test_sobol_sequence_generator():
    seq = kt._native.SobolSequence(5, scramble=False)
    X = seq.generate(8)
    assert X.shape == (8, 5)
    np.testing.assert_array_equal(X[2], [0.75, 0.25, 0.25, 0.25, 0.75])
    assert seq.index == 8
    np.testing.assert_array_equal(seq.point(2), X[2])
    assert kt.Sobol.max_dims >= 1111
    big = kt._native.SobolSequence(1111, seed=1).generate(16)
    assert big.shape == (16, 1111) and 0.0 <= big.min() and big.max() < 1.0


def test_random_search_dedupe_small_space():
    s = kt.SearchSpace().add_categorical("a", ["x", "y", "z"]).add_int("b", 0, 1)
    study = kt.Study(s, searcher=kt.RandomSearch(), seed=1)
    got = [tuple(t.params.values()) for t in study.ask(10)]
    assert len(got) == 6 == len(set(got))


# ------------------------------------------------------------------------------- settings tables (issue #19)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "settings"
RENAMED = {"random_state": "seed", "threads": "n_threads"}  # old written names -> today's


def _fixture_module():
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(p.name[:-len(".study.json")] for p in FIXTURES.glob("*.study.json")))
def test_settings_fixture_studies_continue(tmp_path, name):
    """Studies saved before the settings tables (tests/fixtures/settings) load and continue exactly."""
    mod = _fixture_module()
    path = tmp_path / f"{name}.study.json"
    shutil.copy(FIXTURES / path.name, path)
    saved = json.loads(path.read_text())
    study = kt.Study.load(str(path))
    # The configs read back are the saved ones, under today's names for the two renamed settings.
    study.save(str(tmp_path / "again.json"))
    again = json.loads((tmp_path / "again.json").read_text())
    for part in ("searcher", "pruner"):
        if saved.get(part):
            old = {RENAMED.get(k, k): v for k, v in saved[part].items()}
            now = again[part]
            assert {k: v for k, v in now.items() if k in old} == old
            assert set(now) - set(old) <= {"seed"}  # GP wrote no seed when unset; now null
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    _, _, resource, _, after = mod.CASES[name]
    log: list = []
    assert mod.run(study, after, resource, log) == expected["params"]
    assert log == expected["pruned_at"]


SETTINGS_CLASSES = ["RandomSearch", "GridSearch", "Sobol", "TPE", "GP", "Hyperband", "BOHB", "ASHA", "ASHAPruner",
                    "HyperbandPruner", "MedianStop", "PercentilePruner"]


@pytest.mark.parametrize("cls", SETTINGS_CLASSES)
def test_every_searcher_takes_its_keywords_from_the_table(cls):
    c = getattr(kt, cls)
    schema = c._settings_schema()
    required = {e["name"]: "epochs" for e in schema if e.get("required")}
    made = c(**required)
    cfg = made.config()
    for e in schema:
        if e.get("ignored"):
            continue
        assert e["name"] in cfg, e["name"]  # every setting is written under its table name
        assert e["doc"] and e["name"] + ": " in c.__doc__
        if not e.get("required"):
            assert cfg[e["name"]] == e["default"], e["name"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        c(**required, bogus=1)
