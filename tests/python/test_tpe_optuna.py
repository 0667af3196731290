"""Differential check of kt.TPE's models against Optuna's TPESampler internals on identical histories.

For the same trials (float, log float, int, stepped float, categorical; ties in the losses; pruned trials;
enough trials that the recency ramp is active), the below/above split, mixture weights, kernel centres and
widths (neighbour distances, magic clip, endpoints rule, prior kernel) and log densities of l(x) and g(x) at
points drawn from Optuna's l(x) must agree with optuna.samplers._tpe (Optuna >= 4.3 semantics; skipped
when Optuna is not installed). Log-scaled integers are excluded from the density comparison on purpose:
kubetune models them as a continuous density in log space (the bin-mass ratio l/g that Optuna uses differs
only by the snap before scoring), which is documented in docs/tpe.md.
"""
import math

import numpy as np
import pytest

import kubetune as kt

optuna = pytest.importorskip("optuna")
_native = pytest.importorskip("kubetune._kubetune")
if not hasattr(_native, "_tpe_models"):
    pytest.skip("extension built without the TPE inspection hooks", allow_module_level=True)

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402
from optuna.samplers._tpe import parzen_estimator as _optuna_pe  # noqa: E402
from optuna.samplers._tpe.sampler import _split_trials, default_gamma  # noqa: E402
from optuna.trial import TrialState, create_trial  # noqa: E402

CHOICES = ["a", "b", "c", "d"]


class _StableArgsortNumpy:
    """numpy with a stable argsort. Optuna sorts kernel centres with np.argsort's default (SIMD quicksort,
    not stable), so which of several kernels at the same centre gets which neighbour gap is an accident of
    the numpy build there; kubetune breaks such ties by trial order, which this reproduces."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def argsort(a, *args, **kwargs):
        kwargs["kind"] = "stable"
        return np.argsort(a, *args, **kwargs)


@pytest.fixture(autouse=True)
def _stable_optuna_argsort(monkeypatch):
    monkeypatch.setattr(_optuna_pe, "np", _StableArgsortNumpy())


def make_spaces(with_log_int):
    space = kt.SearchSpace()
    space.add_float("f", -5.0, 10.0)
    space.add_float("lf", 1e-3, 10.0, log=True)
    space.add_int("i", -3, 12)
    space.add_float("sf", 0.0, 2.0, step=0.25)
    space.add_categorical("c", CHOICES)
    dists = {
        "f": FloatDistribution(-5.0, 10.0),
        "lf": FloatDistribution(1e-3, 10.0, log=True),
        "i": IntDistribution(-3, 12),
        "sf": FloatDistribution(0.0, 2.0, step=0.25),
        "c": CategoricalDistribution(CHOICES),
    }
    if with_log_int:
        space.add_int("li", 1, 200, log=True)
        dists["li"] = IntDistribution(1, 200, log=True)
    return space, dists


def random_params(rng, with_log_int):
    p = {
        "f": float(rng.uniform(-5, 10)),
        "lf": float(math.exp(rng.uniform(math.log(1e-3), math.log(10.0)))),
        "i": int(rng.integers(-3, 13)),
        "sf": float(rng.integers(0, 9) * 0.25),
        "c": CHOICES[int(rng.integers(0, 4))],
    }
    if with_log_int:
        p["li"] = int(round(math.exp(rng.uniform(0, math.log(200)))))
    return p


def build_histories(seed, n, with_log_int=False, n_pruned=0):
    """The same trials in a kt.Study and an optuna Study (losses rounded so that ties occur)."""
    rng = np.random.default_rng(seed)
    space, dists = make_spaces(with_log_int)
    study = kt.Study(space, searcher=kt.TPE(), seed=0)
    trials = []
    for k in range(n):
        p = random_params(rng, with_log_int)
        if k < n_pruned:
            steps = {s: float(np.round(rng.normal(), 1)) for s in range(int(rng.integers(1, 4)))}
            study.add_trial(p, state="pruned", intermediate=steps)
            trials.append(create_trial(params=p, distributions=dists, state=TrialState.PRUNED,
                                       intermediate_values=steps))
        else:
            y = float(np.round(rng.normal(), 1))  # coarse values: many tied losses
            study.add_trial(p, y)
            trials.append(create_trial(params=p, distributions=dists, value=y))
    ostudy = optuna.create_study()
    ostudy.add_trials(trials)
    return study, ostudy, space, dists


def to_model(name, dist, v):
    """Optuna's internal representation -> kubetune's model coordinates."""
    if isinstance(dist, CategoricalDistribution):
        return float(v)
    return math.log(v) if dist.log else float(v)


def optuna_models(ostudy, dists, multivariate):
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    sampler = optuna.samplers.TPESampler(multivariate=multivariate, seed=0)
    trials = ostudy.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
    below, above = _split_trials(ostudy, trials, default_gamma(len(trials)))
    groups = [dict(dists)] if multivariate else [{k: v} for k, v in dists.items()]
    out = []
    for g in groups:
        lo = sampler._build_parzen_estimator(ostudy, g, below, handle_below=True)
        hi = sampler._build_parzen_estimator(ostudy, g, above, handle_below=False)
        out.append((g, lo, hi))
    return out, below, above


def compare(study, ostudy, space, dists, multivariate, check_density=True):
    ours = _native._tpe_models(kt.TPE(multivariate=multivariate), study)
    theirs, below, above = optuna_models(ostudy, dists, multivariate)
    assert len(ours) == len(theirs)
    names = list(dists)
    n_checked = 0
    for gm, (g, lo_o, hi_o) in zip(ours, theirs):
        assert [names[i] for i in gm["params"]] == list(g)
        pts_o = lo_o.sample(np.random.RandomState(7), 40)
        pts_o = {k: np.concatenate([v, hi_o.sample(np.random.RandomState(8), 40)[k]]) for k, v in pts_o.items()}
        for est, mpe, trials in ((gm["below"], lo_o, below), (gm["above"], hi_o, above)):
            mix = mpe._mixture_distribution
            np.testing.assert_allclose(sorted(est.weights), sorted(mix.weights), rtol=1e-12, atol=0)
            assert est.n_kernels == len(trials) + 1
            for d, name in enumerate(g):
                dist = g[name]
                od = mix.distributions[d]
                if isinstance(dist, CategoricalDistribution):
                    # kernel centres: the observed indices (prior last as -1)
                    obs = [float(dist.to_internal_repr(t.params[name])) for t in trials]
                    assert sorted(est.mus(d)[:-1]) == sorted(obs)
                    continue
                mus = np.asarray(est.mus(d))
                sig = np.asarray(est.sigmas(d))
                # prior kernel last in both
                np.testing.assert_allclose(mus[-1], od.mu[-1], rtol=1e-12)
                np.testing.assert_allclose(sig[-1], od.sigma[-1], rtol=1e-12)
                # observation kernels: univariate estimators keep theirs sorted by centre -> compare as pairs
                a = sorted(zip(mus[:-1], sig[:-1]))
                b = sorted(zip(od.mu[:-1], od.sigma[:-1]))
                np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-12, atol=1e-12)
            if multivariate:
                # joint kernels: the same rows (centre and width in every dimension, weight); kubetune stores
                # large joint models sorted by the first dimension, so compare the rows as sorted lists
                num = [d for d, name in enumerate(g) if not isinstance(g[name], CategoricalDistribution)]
                rows_k = sorted(tuple([v for d in num for v in (est.mus(d)[k], est.sigmas(d)[k])] + [est.weights[k]])
                                for k in range(est.n_kernels - 1))
                rows_o = sorted(tuple([v for d in num for v in (mix.distributions[d].mu[k],
                                                                mix.distributions[d].sigma[k])] + [mix.weights[k]])
                                for k in range(len(trials)))
                np.testing.assert_allclose(np.array(rows_k), np.array(rows_o), rtol=1e-12, atol=1e-12)
            if not check_density:
                continue
            theirs_lp = mpe.log_pdf(pts_o)
            pts = [[to_model(name, g[name], pts_o[name][r]) for name in g] for r in range(len(theirs_lp))]
            ours_lp = np.asarray(est.log_pdf(pts))
            np.testing.assert_allclose(ours_lp, theirs_lp, rtol=1e-9, atol=1e-9)
            n_checked += len(pts)
    return n_checked


@pytest.mark.parametrize("multivariate", [False, True])
@pytest.mark.parametrize("n,n_pruned", [(12, 0), (40, 3), (120, 5)])
def test_models_match_optuna(multivariate, n, n_pruned):
    study, ostudy, space, dists = build_histories(seed=n, n=n, n_pruned=n_pruned)
    assert compare(study, ostudy, space, dists, multivariate) > 0


@pytest.mark.parametrize("multivariate", [False, True])
def test_log_int_kernels_match_optuna(multivariate):
    # Kernel centres and widths of log-scaled integers agree too; only the density differs (see module doc).
    study, ostudy, space, dists = build_histories(seed=3, n=50, with_log_int=True)
    compare(study, ostudy, space, dists, multivariate, check_density=False)


def test_split_ties_follow_trial_order():
    # 30 trials with only three distinct losses: the 3 "below" ones are the first three of the best value.
    space = kt.SearchSpace().add_float("x", 0.0, 1.0)
    study = kt.Study(space, searcher=kt.TPE(multivariate=True), seed=0)
    xs = np.linspace(0.01, 0.99, 30)
    ys = [float(k % 3) for k in range(30)]
    for x, y in zip(xs, ys):
        study.add_trial({"x": float(x)}, y)
    (gm,) = _native._tpe_models(kt.TPE(multivariate=True), study)
    np.testing.assert_allclose(gm["below"].mus(0)[:-1], xs[[0, 3, 6]], rtol=0, atol=0)


@pytest.mark.parametrize("multivariate", [False, True])
def test_candidates_follow_optunas_l_x(multivariate):
    # Candidates are drawn from l(x): the mean of Optuna's log l(x) over kubetune's draws must match its mean
    # over Optuna's own draws (a joint check: choosing the kernel per dimension instead of per point, or a
    # biased truncated-normal sampler, moves it by many standard errors).
    study, ostudy, space, dists = build_histories(seed=5, n=120)
    ours = _native._tpe_models(kt.TPE(multivariate=multivariate), study)
    theirs, _, _ = optuna_models(ostudy, dists, multivariate)
    m = 4000
    for gm, (g, lo_o, hi_o) in zip(ours, theirs):
        for est, mpe in ((gm["below"], lo_o), (gm["above"], hi_o)):  # 12 and 108 kernels (sorted storage)
            a = mpe.log_pdf(mpe.sample(np.random.RandomState(1), m))
            draws = np.asarray(est.sample(m, 3))
            ext = {}
            for d, name in enumerate(g):
                dist = g[name]
                log = not isinstance(dist, CategoricalDistribution) and dist.log
                ext[name] = np.exp(draws[:, d]) if log else draws[:, d]
            b = mpe.log_pdf(ext)
            se = math.sqrt(np.var(a) / m + np.var(b) / m)
            assert abs(a.mean() - b.mean()) < 4 * se, (list(g), a.mean(), b.mean(), se)
