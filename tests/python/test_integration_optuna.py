"""kubetune.integrations.optuna: Optuna's own conformance suites for third-party samplers, plus exact checks of
the conversion (against kt.Study.replay on hand-written records), determinism, constant liar, pruned and failed
trials, bad input, and the pruner adapter (against kubetune's own studies and Optuna's PercentilePruner)."""
from __future__ import annotations

import math
import pickle
from typing import Any, Callable

import pytest

optuna = pytest.importorskip("optuna")
pytest_samplers = pytest.importorskip("optuna.testing.pytest_samplers")

import numpy as np  # noqa: E402
from optuna.distributions import (  # noqa: E402
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers import BaseSampler  # noqa: E402
from optuna.trial import FrozenTrial, TrialState  # noqa: E402

import kubetune as kt  # noqa: E402
from kubetune.integrations import optuna as kto  # noqa: E402
from kubetune.integrations.optuna import KubetunePruner, KubetuneSampler  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)

BasicSamplerTestCase = pytest_samplers.BasicSamplerTestCase
RelativeSamplerTestCase = pytest_samplers.RelativeSamplerTestCase
MultiObjectiveSamplerTestCase = pytest_samplers.MultiObjectiveSamplerTestCase
SingleOnlySamplerTestCase = pytest_samplers.SingleOnlySamplerTestCase


# ------------------------------------------------------------------------------------ Optuna's conformance suites
# The suites size themselves: at most ~100 samples of one parameter with no finished history, or 3-20 trials
# of small objectives, so even kt.GP stays in the tens of milliseconds per case.


class TestTPEUnivariateConformance(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return lambda: KubetuneSampler(kt.TPE(), seed=0)


class TestTPEMultivariateConformance(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return lambda: KubetuneSampler(kt.TPE(multivariate=True), seed=0)


class TestGPConformance(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return lambda: KubetuneSampler(kt.GP(n_initial_points=4), seed=0)


class TestSobolConformance(BasicSamplerTestCase, RelativeSamplerTestCase, MultiObjectiveSamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return lambda: KubetuneSampler(kt.Sobol(seed=3), seed=0)


class TestRandomSearchConformance(BasicSamplerTestCase, RelativeSamplerTestCase, MultiObjectiveSamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return lambda: KubetuneSampler(kt.RandomSearch(), seed=0)


# ------------------------------------------------------------------------------------ helpers

SEED = 11


def _mixed_objective(trial: optuna.Trial) -> float:
    """Every distribution kind the sampler maps; pruned and failed trials on purpose."""
    a = trial.suggest_float("a", -2.0, 2.0)
    b = trial.suggest_float("b", 1e-3, 10.0, log=True)
    c = trial.suggest_float("c", -1.0, 1.0, step=0.25)
    d = trial.suggest_int("d", -3, 7)
    e = trial.suggest_int("e", 1, 64, log=True)
    f = trial.suggest_int("f", 0, 12, step=3)
    g = trial.suggest_categorical("g", [None, True, 2, 2.5, "2", "none"])
    value = -(a - 0.5) ** 2 - abs(math.log10(b)) + c - abs(d - 2) / 3 - abs(math.log2(e) - 3) / 2 + f / 12
    value += {None: 0.0, True: 1.0, 2: -1.0, 2.5: 0.5, "2": -0.5, "none": 0.25}[g]
    if trial.number % 7 == 3:
        raise ValueError("a failed trial")
    if trial.number % 5 == 4:
        trial.report(value - 1.0, 0)
        trial.report(value - 0.5, 3)
        raise optuna.TrialPruned()
    return value


def _kt_space(space: dict[str, BaseDistribution]) -> kt.SearchSpace:
    """The kubetune space written out by hand (the reference for the sampler's own conversion)."""
    s = kt.SearchSpace()
    for name, dist in space.items():
        if isinstance(dist, FloatDistribution):
            s.add_float(name, dist.low, dist.high, log=dist.log, step=dist.step)
        elif isinstance(dist, IntDistribution):
            s.add_int(name, dist.low, dist.high, log=dist.log, step=dist.step)
        else:
            assert isinstance(dist, CategoricalDistribution)
            s.add_categorical(name, [str(i) for i in range(len(dist.choices))])
    return s


def _records(trials: list[FrozenTrial], space: dict[str, BaseDistribution], skip: int) -> list[dict[str, Any]]:
    """Study.replay records written out by hand: COMPLETE with values, PRUNED with curves, RUNNING pending,
    FAIL left out; categorical values as the index of the choice (Optuna's own to_internal_repr)."""
    states = {TrialState.COMPLETE: "complete", TrialState.PRUNED: "pruned", TrialState.RUNNING: "running"}
    out = []
    for t in trials:
        if t.number == skip or t.state not in states or any(n not in t.params for n in space):
            continue
        params: dict[str, Any] = {}
        for name, dist in space.items():
            v = t.params[name]
            params[name] = str(int(dist.to_internal_repr(v))) if isinstance(dist, CategoricalDistribution) else v
        rec: dict[str, Any] = {"params": params, "state": states[t.state],
                               "intermediate": dict(t.intermediate_values)}
        if t.state == TrialState.COMPLETE:
            rec["values"] = list(t.values)
        if isinstance(t.system_attrs.get(kto.RELATIVE_ATTRS_KEY), dict):
            rec["system_attrs"] = t.system_attrs[kto.RELATIVE_ATTRS_KEY]
        out.append(rec)
    return out


def _decode(space: dict[str, BaseDistribution], params: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, dist in space.items():
        v = params[name]
        out[name] = dist.choices[int(v)] if isinstance(dist, CategoricalDistribution) else v
    return out


def _new_trial(study: optuna.Study) -> FrozenTrial:
    return study._storage.get_trial(study._storage.create_new_trial(study._study_id))


# ------------------------------------------------------------------------------------ exact conversion


@pytest.mark.parametrize(
    "make",
    [lambda: kt.TPE(multivariate=True), lambda: kt.TPE(), lambda: kt.GP(n_initial_points=5), lambda: kt.Sobol(seed=2)],
    ids=["tpe-multivariate", "tpe", "gp", "sobol"],
)
def test_relative_sample_equals_a_hand_written_replay(make: Callable[[], kt.Searcher]) -> None:
    sampler = KubetuneSampler(make(), seed=SEED)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(_mixed_objective, n_trials=24, catch=(ValueError,))
    study.ask().suggest_float("a", -2.0, 2.0)  # running, without the other parameters yet: left out
    for _ in range(2):  # running with all their parameters: pending points
        _mixed_objective_params(study.ask())
    states = [t.state for t in study.trials]
    assert {TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING} <= set(states)

    # As in Optuna's own flow: ask (which resets the study's per-trial cache), then sample the new trial.
    trial = study._storage.get_trial(study.ask()._trial_id)
    space = sampler.infer_relative_search_space(study, trial)
    assert list(space) == ["a", "b", "c", "d", "e", "f", "g"]
    got = sampler.sample_relative(study, trial, space)

    records = _records(study.trials, space, skip=trial.number)
    ref = kt.Study.replay(_kt_space(space), make(), records, direction="maximize", seed=kto._mix(SEED, 0),
                          ask_counter=trial.number).ask()
    assert got == _decode(space, ref.params)
    for name, dist in space.items():
        assert dist._contains(dist.to_internal_repr(got[name]))
        if isinstance(dist, IntDistribution):
            assert type(got[name]) is int
        elif isinstance(dist, FloatDistribution):
            assert type(got[name]) is float
    stored = study._storage.get_trial(trial._trial_id).system_attrs.get(kto.RELATIVE_ATTRS_KEY)
    assert stored == (dict(ref.system_attrs) or None)


def _mixed_objective_params(trial: optuna.Trial) -> None:
    trial.suggest_float("a", -2.0, 2.0)
    trial.suggest_float("b", 1e-3, 10.0, log=True)
    trial.suggest_float("c", -1.0, 1.0, step=0.25)
    trial.suggest_int("d", -3, 7)
    trial.suggest_int("e", 1, 64, log=True)
    trial.suggest_int("f", 0, 12, step=3)
    trial.suggest_categorical("g", [None, True, 2, 2.5, "2", "none"])


def test_categorical_choices_of_every_type_come_back_as_the_same_objects() -> None:
    nan = float("nan")
    choices = (None, True, 2, 2.5, "2", "none", -1, nan)
    study = optuna.create_study(sampler=KubetuneSampler(kt.Sobol(seed=1), seed=SEED))
    seen: list[Any] = []

    def objective(trial: optuna.Trial) -> float:
        v = trial.suggest_categorical("v", choices)
        seen.append(v)
        return 0.0

    study.optimize(objective, n_trials=48)
    # Each value is one of the choice objects (type and value, NaN included), and every choice shows up.
    idx = [next(i for i, c in enumerate(choices) if c is v) for v in seen]
    assert sorted(set(idx)) == list(range(len(choices)))
    for t, i in zip(study.trials, idx):
        p = t.params["v"]
        assert type(p) is type(choices[i]) and (p == choices[i] or (i == 7 and math.isnan(p)))


def test_categorical_history_is_read_by_index() -> None:
    # TPE learns that True (index 1) is the good choice; the ints and strings around it are bad.
    choices = (None, True, 2, "True", 2.5)

    def objective(t: optuna.Trial) -> float:
        return (0.0 if t.suggest_categorical("c", choices) is True else 1.0) + 0.01 * t.suggest_float("x", 0, 1)

    study = optuna.create_study(sampler=KubetuneSampler(kt.TPE(n_startup_trials=8), seed=SEED))
    study.optimize(objective, n_trials=60)
    late = [t.params["c"] for t in study.trials[30:]]
    assert sum(v is True for v in late) >= 20  # uniform sampling would give 6 of 30


# ------------------------------------------------------------------------------------ determinism


def _conditional_objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -3.0, 3.0)
    kind = trial.suggest_categorical("kind", ["lin", "quad"])
    if kind == "lin":
        return abs(x) + trial.suggest_float("slope", 0.0, 1.0)  # dynamic: sampled alone
    return x * x + trial.suggest_int("order", 1, 4)


@pytest.mark.parametrize(
    "make",
    [lambda: kt.TPE(multivariate=True), lambda: kt.TPE(), lambda: kt.GP(n_initial_points=5), lambda: kt.Sobol()],
    ids=["tpe-multivariate", "tpe", "gp", "sobol"],
)
def test_same_seed_same_history_same_answer_whatever_the_cache(make: Callable[[], kt.Searcher]) -> None:
    a = optuna.create_study(sampler=KubetuneSampler(make(), seed=5))
    a.optimize(_conditional_objective, n_trials=20)
    b = optuna.create_study(sampler=KubetuneSampler(make(), seed=5))
    b.optimize(_conditional_objective, n_trials=20)
    assert [t.params for t in a.trials] == [t.params for t in b.trials]
    # A fresh sampler on a copy of the first k trials gives trial k's parameters (the warm one had caches).
    for k in (0, 1, 6, 13, 19):
        c = optuna.create_study(sampler=KubetuneSampler(make(), seed=5))
        c.add_trials(a.trials[:k])
        c.optimize(_conditional_objective, n_trials=1)
        assert c.trials[k].params == a.trials[k].params, k
    other = optuna.create_study(sampler=KubetuneSampler(make(), seed=6))
    other.optimize(_conditional_objective, n_trials=3)
    assert [t.params for t in other.trials] != [t.params for t in a.trials[:3]]


def test_pickled_sampler_and_pruner_answer_alike() -> None:
    sampler = KubetuneSampler(kt.GP(n_initial_points=4), seed=9)
    a = optuna.create_study(sampler=sampler)
    a.optimize(_conditional_objective, n_trials=8)
    copy = pickle.loads(pickle.dumps(sampler))  # caches are not pickled: it starts cold
    b = optuna.create_study(sampler=copy)
    b.add_trials(a.trials[:6])
    b.optimize(_conditional_objective, n_trials=2)
    assert [t.params for t in b.trials] == [t.params for t in a.trials]
    pruner = pickle.loads(pickle.dumps(KubetunePruner(kt.PercentilePruner(50.0))))
    assert "percentile" in repr(pruner)


def test_reseed_rng_changes_the_stream() -> None:
    s1, s2 = KubetuneSampler(kt.TPE(), seed=1), KubetuneSampler(kt.TPE(), seed=1)
    s2.reseed_rng()
    study = optuna.create_study()
    d = FloatDistribution(0.0, 1.0)
    trial = _new_trial(study)
    assert s1.sample_independent(study, trial, "x", d) != s2.sample_independent(study, trial, "x", d)


# ------------------------------------------------------------------------------------ trial states


@pytest.mark.parametrize("make", [lambda: kt.TPE(), lambda: kt.RandomSearch()], ids=["tpe", "random"])
def test_running_trials_are_pending_points(make: Callable[[], kt.Searcher]) -> None:
    # Four running trials over four choices: each sees the others as pending (no repeats while unseen
    # points remain), for every seed.
    for seed in range(6):
        study = optuna.create_study(sampler=KubetuneSampler(make(), seed=seed))
        values = [study.ask().suggest_categorical("c", ["a", "b", "c", "d"]) for _ in range(4)]
        assert sorted(values) == ["a", "b", "c", "d"], (seed, values)


def test_waiting_trials_are_pending_points() -> None:
    dist = CategoricalDistribution(["a", "b"])
    for seed in range(8):
        study = optuna.create_study(sampler=KubetuneSampler(kt.TPE(), seed=seed))
        study.enqueue_trial({"c": "a"})  # WAITING, with its fixed parameter
        assert study.trials[0].state == TrialState.WAITING
        trial = _new_trial(study)
        assert study.sampler.sample_independent(study, trial, "c", dist) == "b"


def _curve_trials(state: TrialState) -> list[FrozenTrial]:
    """Three trials at x ~ 0.9 with good learning curves, seven at x ~ 0.1-0.4 with bad ones."""
    dist = {"x": FloatDistribution(0.0, 1.0)}
    out = []
    for i in range(10):
        good = i in (2, 5, 8)
        x = 0.88 + 0.02 * (i % 3) if good else 0.1 + 0.04 * i
        curve = {0: 0.2, 5: 0.1 + 0.01 * i} if good else {0: 0.9, 5: 0.9 + 0.01 * i}
        out.append(optuna.create_trial(state=state, params={"x": x}, distributions=dist, intermediate_values=curve))
    return out


def _draws(history: Callable[[optuna.Study], None]) -> list[float]:
    study = optuna.create_study(sampler=KubetuneSampler(kt.TPE(n_startup_trials=5, gamma=0.3), seed=SEED))
    history(study)
    d = FloatDistribution(0.0, 1.0)
    return [study.sampler.sample_independent(study, _new_trial(study), "x", d) for _ in range(30)]


def test_pruned_trials_count_with_their_curves() -> None:
    # Ten pruned trials end TPE's startup (5); the below set is the three with the best curves, at x ~ 0.9.
    pruned = np.array(_draws(lambda s: s.add_trials(_curve_trials(TrialState.PRUNED))))
    assert np.mean(np.abs(pruned - 0.9) < 0.1) > 0.8, pruned
    # Without curves the same ten pruned trials rank as equals (reference: the first three are below).
    flat = [optuna.create_trial(state=TrialState.PRUNED, params=t.params, distributions=t.distributions)
            for t in _curve_trials(TrialState.PRUNED)]
    assert np.mean(np.abs(np.array(_draws(lambda s: s.add_trials(flat))) - 0.9) < 0.1) < 0.5


def test_failed_trials_are_ignored() -> None:
    # Failed trials are as absent as trials that never got parameters: the very same draws (random startup).
    failed = _draws(lambda s: s.add_trials(_curve_trials(TrialState.FAIL)))
    empty = _draws(lambda s: [_new_trial(s) for _ in range(10)])
    assert failed == empty
    assert np.std(failed) > 0.2


def test_maximize_follows_the_direction() -> None:
    def run(direction: str) -> float:
        study = optuna.create_study(direction=direction, sampler=KubetuneSampler(kt.TPE(), seed=SEED))
        study.optimize(lambda t: (t.suggest_float("x", 0.0, 1.0) - 0.2) ** 2, n_trials=40)
        return float(study.best_params["x"])

    assert abs(run("minimize") - 0.2) < 0.05
    assert run("maximize") > 0.9


# ------------------------------------------------------------------------------------ objectives


def test_several_objectives_with_value_blind_searchers() -> None:
    study = optuna.create_study(directions=["minimize", "maximize"],
                                sampler=KubetuneSampler(kt.Sobol(seed=4), seed=SEED))
    study.optimize(lambda t: (t.suggest_float("x", 0, 1), t.suggest_float("y", 0, 1)), n_trials=16)
    points = {(t.params["x"], t.params["y"]) for t in study.trials}
    assert len(points) == 16 and all(t.state == TrialState.COMPLETE for t in study.trials)


@pytest.mark.parametrize("make", [lambda: kt.TPE(), lambda: kt.GP()], ids=["tpe", "gp"])
def test_several_objectives_with_a_model_based_searcher_is_a_clear_error(make: Callable[[], kt.Searcher]) -> None:
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=KubetuneSampler(make()))
    with pytest.raises(ValueError, match="one objective, the study has 2 directions"):
        study.sampler.sample_independent(study, _new_trial(study), "x", FloatDistribution(0, 1))


# ------------------------------------------------------------------------------------ bad input


class _Wedge(BaseDistribution):
    """A distribution kubetune does not know."""

    def to_internal_repr(self, param_value_in_external_repr: Any) -> float:
        return float(param_value_in_external_repr)

    def single(self) -> bool:
        return False

    def _contains(self, param_value_in_internal_repr: float) -> bool:
        return 0.0 <= param_value_in_internal_repr <= 1.0


def _snapshot(study: optuna.Study) -> list[tuple[Any, ...]]:
    return [(t.number, t.state, t.params, t.values, t.system_attrs, t.intermediate_values) for t in study.trials]


def test_unsupported_distribution_is_a_clear_error_and_leaves_the_study_unchanged() -> None:
    study = optuna.create_study(sampler=KubetuneSampler(kt.TPE(multivariate=True), seed=SEED))
    study.optimize(lambda t: t.suggest_float("y", 0, 1), n_trials=5)
    before = _snapshot(study)
    trial = study.ask()
    with pytest.raises(TypeError, match=r"parameter 'w' has an unsupported distribution .*_Wedge"):
        trial._suggest("w", _Wedge())
    with pytest.raises(ValueError, match=r"parameter 'z'.*bounds must be finite"):
        trial.suggest_float("z", 0.0, math.inf)
    frozen = study._storage.get_trial(trial._trial_id)
    assert frozen.params == {} and not any(k.startswith("kubetune") for k in frozen.system_attrs)
    assert _snapshot(study)[:5] == before
    # The same trial and the study go on.
    study.tell(trial, trial.suggest_float("y", 0, 1))
    study.optimize(lambda t: t.suggest_float("y", 0, 1), n_trials=2)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 8


def test_unsupported_distribution_in_the_history_stays_out_of_the_relative_space() -> None:
    sampler = KubetuneSampler(kt.TPE(multivariate=True), seed=SEED)
    study = optuna.create_study(sampler=sampler)
    dists = {"x": FloatDistribution(0, 1), "w": _Wedge()}
    for v in (0.2, 0.4, 0.6):
        study.add_trial(optuna.create_trial(params={"x": v, "w": v}, distributions=dists, value=v))
    trial = _new_trial(study)
    space = sampler.infer_relative_search_space(study, trial)
    assert list(space) == ["x"]
    assert 0.0 <= sampler.sample_relative(study, trial, space)["x"] <= 1.0


def test_constructor_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="kubetune searcher"):
        KubetuneSampler("tpe")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed"):
        KubetuneSampler(kt.TPE(), seed="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="kubetune pruner"):
        KubetunePruner(kt.TPE())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed"):
        KubetunePruner(kt.MedianStop(), seed=1.5)  # type: ignore[arg-type]


def test_an_exhausted_finite_space_still_gets_answers() -> None:
    study = optuna.create_study(sampler=KubetuneSampler(kt.TPE(), seed=SEED))
    study.optimize(lambda t: float(t.suggest_int("k", 0, 2)), n_trials=8)
    assert sorted({t.params["k"] for t in study.trials[:3]}) == [0, 1, 2]  # the first three cover the space
    assert all(t.state == TrialState.COMPLETE for t in study.trials)


# ------------------------------------------------------------------------------------ pruner


def _curve(number: int, step: int) -> float:
    rng = np.random.default_rng(1000 + number)
    level = rng.uniform(0.0, 1.0)
    return float(level + 1.0 / (1 + step) + 0.05 * rng.standard_normal() * (step % 3))


PRUNERS = {
    "median": lambda: kt.MedianStop(min_trials_required=3, start_step=4),
    "percentile": lambda: kt.PercentilePruner(25.0, n_startup_trials=3, n_warmup_steps=2),
    "asha": lambda: kt.ASHAPruner(min_resource=1, max_resource=27, eta=3),
    "hyperband": lambda: kt.HyperbandPruner(min_resource=1, max_resource=27, eta=3),
}


@pytest.mark.parametrize("name", sorted(PRUNERS))
def test_pruner_decides_as_a_kubetune_study_would(name: str) -> None:
    study = optuna.create_study(pruner=KubetunePruner(PRUNERS[name]()),
                                sampler=optuna.samplers.RandomSampler(seed=0))
    space = kt.SearchSpace().add_float("_", 0.0, 1.0)
    native = kt.Study(space, "random", pruner=PRUNERS[name]())
    decisions: list[bool] = []

    def objective(trial: optuna.Trial) -> float:
        nt = native.ask()
        assert nt.id == trial.number
        value = math.nan
        for step in range(1, 28):
            value = _curve(trial.number, step)
            trial.report(value, step)
            native.report(nt.id, step, value)
            if trial.number % 9 == 5 and step == 1:  # failed trials keep their curve; pruners skip them
                native.tell(nt.id, state="failed")
                raise ValueError("a failed trial")
            d = trial.should_prune()
            assert d == native.should_prune(nt.id), (trial.number, step)
            decisions.append(d)
            if d:
                native.tell(nt.id, state="pruned")
                raise optuna.TrialPruned()
        native.tell(nt.id, value)
        return value

    study.optimize(objective, n_trials=30, catch=(ValueError,))
    states = [t.state for t in study.trials]
    assert any(decisions) and states.count(TrialState.PRUNED) >= 3, states
    assert states.count(TrialState.FAIL) == 3


@pytest.mark.parametrize("percentile", [25.0, 50.0])
def test_percentile_pruner_agrees_with_optunas(percentile: float) -> None:
    ours = KubetunePruner(kt.PercentilePruner(percentile, n_startup_trials=4, n_warmup_steps=2, interval_steps=2))
    theirs = optuna.pruners.PercentilePruner(percentile, n_startup_trials=4, n_warmup_steps=2, interval_steps=2)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    agree = prunes = 0

    def objective(trial: optuna.Trial) -> float:
        nonlocal agree, prunes
        value = math.nan
        for step in range(12):
            value = _curve(trial.number, step)
            trial.report(value, step)
            frozen = study._storage.get_trial(trial._trial_id)
            a, b = ours.prune(study, frozen), theirs.prune(study, frozen)
            assert a == b, (trial.number, step)
            agree += 1
            if a:
                prunes += 1
                raise optuna.TrialPruned()
        return value

    study.optimize(objective, n_trials=40)
    assert prunes >= 5 and agree > 100


# ------------------------------------------------------------------------------------ the bulk path in kubetune


def _bulk_history() -> tuple[kt.SearchSpace, list[dict[str, Any]], dict[str, Any]]:
    space = kt.SearchSpace().add_float("a", 0.0, 1.0).add_int("b", 1, 9, step=2).add_categorical("c", ["p", "q"])
    S = {s: getattr(kt.TrialState, s.upper()).value for s in ("complete", "pruned", "running", "failed")}
    rows = [  # a, b, c-index, state, value, curve, attrs
        (0.1, 3, 0, "complete", 0.5, {}, {}),
        (0.7, 9, 1, "pruned", None, {1: 0.9, 4: 0.8}, {}),
        (0.4, 5, 1, "complete", 0.2, {2: 0.3}, {"sobol_index": 4.0}),
        (0.9, 1, 0, "failed", None, {}, {}),
        (0.3, 7, 0, "complete", 0.1, {}, {}),
        (0.6, 5, 1, "running", None, {}, {}),
    ]
    records = [{"params": {"a": a, "b": b, "c": "pq"[c]}, "state": st, "values": None if v is None else [v],
                "intermediate": cur, "system_attrs": at} for a, b, c, st, v, cur, at in rows]
    inter = [(i, s, v) for i, r in enumerate(rows) for s, v in r[5].items()]
    cols = {
        "x": np.array([[a, b, c] for a, b, c, *_ in rows], dtype=float),
        "state": np.array([S[r[3]] for r in rows]),
        "values": np.array([[r[4] if r[4] is not None else 0.0] for r in rows]),
        "intermediate": tuple(np.array(col) for col in zip(*inter)),
        "system_attrs": {i: r[6] for i, r in enumerate(rows) if r[6]},
    }
    return space, records, cols


def _trial_view(study: kt.Study) -> list[tuple[Any, ...]]:
    return [(t.id, t.state, t.params, t.values, t.intermediate_values, t.system_attrs) for t in study.trials]


def test_columns_replay_like_records_and_replace_trials_keeps_a_prefix() -> None:
    space, records, cols = _bulk_history()
    searcher = kt.TPE(n_startup_trials=2)
    a = kt.Study.replay(space, searcher, records, seed=3, ask_counter=7)
    b = kt.Study.replay(space, searcher, cols, seed=3, ask_counter=7)
    assert _trial_view(a) == _trial_view(b)
    assert [t.state for t in a.trials][3] == kt.TrialState.FAILED and len(a) == 6
    ask = a.ask()
    assert b.ask().x == ask.x
    # A kept study refilled in two steps (the first 3 kept) asks exactly as the fresh replay.
    c = kt.Study(space, searcher, seed=3)
    head = {k: (v[:3] if k in ("x", "state", "values") else None) for k, v in cols.items()}
    c.replace_trials(head, ask_counter=1)
    c.ask()
    rest = {"x": cols["x"][3:], "state": cols["state"][3:], "values": cols["values"][3:]}
    c.replace_trials(rest, ask_counter=7, keep=3)
    assert [t.id for t in c.trials] == list(range(6))
    assert c.ask().x == ask.x


def test_replace_trials_rejects_bad_input_and_leaves_the_study_unchanged() -> None:
    space, records, cols = _bulk_history()
    s = kt.Study.replay(space, kt.TPE(), cols, seed=3)
    before = _trial_view(s)
    bad: list[tuple[dict[str, Any], dict[str, Any], str]] = [
        ({"x": cols["x"][:, :2]}, {}, "'x' has 2 columns, the space has 3"),
        ({"state": np.array([1, 2])}, {}, "'state' must be a 1-D integer array of 6"),
        ({"state": np.full(6, 9)}, {}, r"state\[0\] = 9 is not a kt.TrialState code"),
        ({"x": cols["x"] + np.array([0.0, 1.0, 0.0])}, {}, "parameter 'b': value 4 is not legal"),
        ({"x": cols["x"] * np.array([2.0, 1.0, 1.0])}, {}, r"trial 1: parameter 'a': value 1.4 outside \[0, 1\]"),
        ({"intermediate": (np.array([7]), np.array([1]), np.array([0.5]))}, {}, "intermediate row 7 outside"),
        ({}, {"keep": 9}, "keep = 9 but the study has 6 trials"),
        ({}, {"keep": 6}, "kept trial 5 is running; only finished trials can be kept"),
    ]
    for change, kw, message in bad:
        with pytest.raises(ValueError, match=message):
            s.replace_trials({**cols, **change}, ask_counter=1, **kw)
        assert _trial_view(s) == before
    with pytest.raises(ValueError, match="list of trial dicts or a dict of trial columns"):
        s.replace_trials((1, 2))  # type: ignore[arg-type]
    # NaN values turn a complete trial into a failed one, as records do.
    nan_values = cols["values"].copy()
    nan_values[0, 0] = math.nan
    s.replace_trials({**cols, "values": nan_values})
    assert s.trials[0].state == kt.TrialState.FAILED
