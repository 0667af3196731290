"""Multi-fidelity search from Python: Hyperband brackets and runs, ASHA and median-stop decisions, BOHB, curves."""
import math
import threading

import pytest

import kubetune as kt


def _lc_cls():
    return getattr(kt.functions, "LearningCurves", None) or kt._native.functions.LearningCurves


def _asha_pruner():
    return getattr(kt, "ASHAPruner", None) or kt._native.ASHAPruner


def _brackets(*a, **k):
    return kt._native.hyperband_brackets(*a, **k)


def test_exact_bracket_tables():
    t = _brackets(81, 3)
    assert [b["rungs"][0][0] for b in t] == [81, 34, 15, 8, 5]
    assert t[1]["rungs"] == [(34, 3.0), (11, 9.0), (3, 27.0), (1, 81.0)]
    assert sum(b["configs"] for b in t) == 143
    assert sum(b["total_resource"] for b in t) == 1902
    assert len(_brackets(243, 3)) == 6  # exact s_max = 5
    assert len(_brackets(243, 3, mode="katib")) == 5  # Katib's float log gives 4
    assert _brackets(81, 3, mode="katib")[1]["rungs"] == [(34, 3.0), (12, 9.0), (4, 27.0), (2, 81.0)]
    assert [b["configs"] for b in _brackets(16, 2)] == [16, 10, 7, 5, 5]
    assert [b["configs"] for b in _brackets(64, 4)] == [64, 22, 8, 4]
    with pytest.raises(ValueError, match="eta"):
        _brackets(81, 1)


def _space():
    s = kt.SearchSpace()
    s.add_float("lr", 1e-4, 1.0, log=True)
    s.add_int("epochs", 1, 27)
    return s


def _obj(p):
    return abs(math.log10(p["lr"]) + 2) + 1.0 / p["epochs"]


def test_hyperband_run_promotions_and_progress():
    hb = kt.Hyperband("epochs", max_resource=27, eta=3)
    assert hb.config()["type"] == "hyperband"
    st = kt.Study(_space(), searcher=hb, seed=3)
    first = {}
    while True:
        ts = st.ask(5)
        if not ts:
            break
        for t in ts:
            st.tell(t.id, _obj(t.params))
    trials = st.trials
    assert len(trials) == 69  # 27+9+3+1 + 12+4+1 + 6+2 + 4
    assert hb.progress(st)["finished"]
    seen = set()
    for t in trials:
        key = (t.system_attrs["hb_config"], t.params["epochs"])
        assert key not in seen
        seen.add(key)
        first.setdefault(t.system_attrs["hb_config"], t.params["lr"])
        assert t.params["lr"] == first[t.system_attrs["hb_config"]]  # promotions keep the point


def test_hyperband_waits_then_promotes():
    st = kt.Study(_space(), searcher=kt.Hyperband("epochs", max_resource=9, bracket=2), seed=1)
    r0 = st.ask(100)
    assert len(r0) == 9 and all(t.params["epochs"] == 1 for t in r0)
    assert st.ask(1) == []  # nothing to run until the rung is complete
    for i, t in enumerate(r0):
        st.tell(t.id, float(i))
    up = st.ask(100)
    assert sorted(t.system_attrs["hb_config"] for t in up) == sorted(r0[i].system_attrs["hb_config"] for i in range(3))
    assert all(t.params["epochs"] == 3 for t in up)


def test_katib_settings_and_errors():
    hb = kt.Hyperband.from_katib([{"name": "r_l", "value": "27"}, {"name": "resource_name", "value": "epochs"},
                                  {"name": "eta", "value": "3"}])
    assert hb.config()["max_resource"] == 27
    with pytest.raises(ValueError, match="bogus"):
        kt.Hyperband.from_katib({"r_l": "27", "resource_name": "epochs", "bogus": "1"})
    with pytest.raises(ValueError, match="epochs"):
        s = kt.SearchSpace()
        s.add_float("lr", 0.1, 1.0)
        kt.Study(s, searcher=kt.Hyperband("epochs"))
    with pytest.raises(ValueError):
        kt.ASHA(eta=1)
    with pytest.raises(ValueError):
        kt.MedianStop(start_step=0)


def test_asha_hand_computed_reports():
    st = kt.Study(_space(), searcher=kt.ASHA(min_resource=1, max_resource=27, eta=3), seed=0)
    ids = [st.ask().id for _ in range(6)]
    decisions = []
    for i, v in zip(ids, [0.5, 0.7, 0.4, 0.45, 0.3, 0.6]):
        st.report(i, 1, v)
        decisions.append(st.should_prune(i))
    # n values at rung 1 -> keep the best max(n // 3, 1)
    assert decisions == [False, True, False, True, False, True]


def test_asha_pruner_with_another_searcher_and_threads():
    lc = _lc_cls()(dim=2, max_budget=27, seed=4)
    st = kt.Study(lc.space(), searcher=kt.RandomSearch(), pruner=_asha_pruner()(min_resource=1, max_resource=27),
                  seed=2)

    def objective(t):
        x = [t.params["x0"], t.params["x1"]]
        v = None
        for e in range(1, 28):
            v = lc.value(x, e)
            t.report(e, v)
            if t.should_prune():
                raise kt.study.TrialPruned()
        return v

    st.optimize(objective, n_trials=60, n_threads=4)
    states = [str(t.state) for t in st.trials]
    assert len(states) == 60
    assert sum("pruned" in s.lower() for s in states) >= 30


def test_median_stop_hand_computed():
    st = kt.Study(_space(), searcher=kt.RandomSearch(), pruner=kt.MedianStop(min_trials_required=2, start_step=2),
                  seed=0)
    st.add_trial({"lr": 0.1, "epochs": 1}, 0.5, intermediate={1: 1.0, 2: 0.8, 3: 0.6})
    st.add_trial({"lr": 0.2, "epochs": 1}, 0.7, intermediate={1: 2.0, 2: 1.0, 3: 0.9})
    st.add_trial({"lr": 0.3, "epochs": 1}, 2.0, intermediate={1: 3.0, 2: 2.0})
    t, u = st.ask().id, st.ask().id
    st.report(t, 1, 1.2)
    assert not st.should_prune(t)  # fewer than start_step reports
    st.report(t, 2, 1.5)
    assert not st.should_prune(t)  # best 1.2 vs median(0.9, 1.5, 2.5) = 1.5
    st.report(u, 1, 2.0)
    st.report(u, 2, 1.9)
    assert st.should_prune(u)
    k = kt.MedianStop.from_katib({"min_trials_required": "3", "start_step": "4"})
    assert k.config()["rule"] == "median"


def test_percentile_pruner():
    p = kt.PercentilePruner(50.0, n_startup_trials=2)
    st = kt.Study(_space(), searcher=kt.RandomSearch(), pruner=p, seed=0)
    for lr, vals in [(0.1, {1: 1.0, 2: 0.8}), (0.2, {1: 2.0, 2: 1.0}), (0.3, {1: 3.0, 2: 2.0})]:
        st.add_trial({"lr": lr, "epochs": 1}, 1.0, intermediate=vals)
    t = st.ask().id
    st.report(t, 1, 1.2)
    st.report(t, 2, 1.3)
    assert st.should_prune(t)  # best 1.2 > median(0.8, 1.0, 2.0) = 1.0


def test_learning_curves_known_final_value_and_determinism():
    lc = _lc_cls()(dim=3, max_budget=27, noise=0.0, seed=5)
    assert lc.final_value(lc.argmin) == pytest.approx(0.0, abs=1e-14)
    u = [0.9, 0.1, 0.5]
    assert lc.value(u, 27) == pytest.approx(lc.final_value(u))
    c = lc.curve(u)
    assert len(c) == 27 and c[0] > c[-1]
    n1 = _lc_cls()(dim=3, max_budget=27, noise=0.05, seed=5)
    assert n1.value(u, 4) == n1.value(u, 4)
    assert n1({"x0": 0.9, "x1": 0.1, "x2": 0.5, "epochs": 4}) == n1.value(u, 4)
    assert len(lc.space()) == 4 if hasattr(lc.space(), "__len__") else True


def _best_final(searcher_cls, seed):
    lc = _lc_cls()(dim=4, max_budget=27, noise=0.01, crossing=1.0, seed=100 + seed)
    st = kt.Study(lc.space(), searcher=searcher_cls("epochs", max_resource=27, n_iterations=4), seed=seed)
    while True:
        ts = st.ask(4)
        if not ts:
            break
        for t in ts:
            st.tell(t.id, lc(t.params))
    full = [t for t in st.trials if t.params["epochs"] == 27]
    best = min(full, key=lambda t: t.values[0])
    return lc.final_value(best.params)


def test_bohb_beats_hyperband_random_sampling():
    import statistics

    hb = [_best_final(kt.Hyperband, s) for s in range(5)]
    bo = [_best_final(kt.BOHB, s) for s in range(5)]
    assert statistics.median(bo) < statistics.median(hb)


def test_concurrent_workers_never_duplicate_a_budget():
    lc = _lc_cls()(dim=2, max_budget=27, seed=1)
    hb = kt.Hyperband("epochs", max_resource=27, n_iterations=2)
    st = kt.Study(lc.space(), searcher=hb, seed=9)
    lock = threading.Lock()

    def worker():
        for _ in range(100000):
            ts = st.ask(1)
            if not ts:
                if hb.progress(st)["finished"]:
                    return
                continue
            st.tell(ts[0].id, lc(ts[0].params))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    keys = [(t.system_attrs["hb_config"], t.params["epochs"]) for t in st.trials]
    assert len(keys) == 2 * 69 and len(set(keys)) == len(keys)
    del lock


def test_searchers_roundtrip_through_config():
    for s in [kt.Hyperband("epochs", max_resource=27, mode="katib"), kt.BOHB("epochs", max_resource=27),
              kt.ASHA(max_resource=27), kt.ASHA(max_resource=27, mode="promote", resource_name="epochs"),
              kt.Hyperband("epochs", max_resource=27, mode="hpbandster")]:
        st = kt.Study(_space(), searcher=s, seed=1)
        assert st.ask(1)
        assert kt._native.make_searcher(s.config()).config() == s.config()
    for p in [kt.MedianStop(rule="katib"), kt.PercentilePruner(10.0), _asha_pruner()(eta=4)]:
        assert p.config()["type"] in ("median_stop", "percentile", "asha")


def _katib_reference(r_l, eta):
    """Transcription of Katib's hyperband service.py state machine (settings round-trip included)."""
    eta, r_l = float(eta), float(r_l)
    s_max = int(math.log(r_l) / math.log(eta))
    out = []
    for s in range(s_max, -1, -1):
        n = int(math.ceil(float(s_max + 1) * (float(eta**s) / float(s + 1))))
        r = r_l * eta ** (-s)
        rungs = [(n, float(int(r)))]
        r = int(float(str(r)))  # algorithm settings carry r as a string; convert() reads int(float(.))
        for i in range(s):
            n_i = math.ceil(n * eta ** (-i))
            top = int(math.ceil(n_i / eta))
            rungs.append((top, float(int(r * eta ** (i + 1)))))
        out.append(rungs)
    return out


def _exact_reference(R, eta):
    """Li et al. 2018, Algorithm 1 with rational arithmetic."""
    from fractions import Fraction

    s_max = 0
    while eta ** (s_max + 1) <= R:
        s_max += 1
    out = []
    for s in range(s_max, -1, -1):
        n = math.ceil(Fraction(s_max + 1, s + 1) * eta**s)
        out.append([(n // eta**i, float(Fraction(R, eta ** (s - i)))) for i in range(s + 1)])
    return out


@pytest.mark.parametrize("R", [9, 10, 16, 27, 64, 81, 100, 243, 729, 1000])
@pytest.mark.parametrize("eta", [2, 3, 4])
def test_tables_match_independent_references(R, eta):
    assert [b["rungs"] for b in _brackets(R, eta, mode="katib")] == _katib_reference(R, eta)
    assert [b["rungs"] for b in _brackets(R, eta)] == _exact_reference(R, eta)


def test_hyperband_pruner():
    cls = getattr(kt, "HyperbandPruner", None) or kt._native.HyperbandPruner
    assert cls(max_resource=243).n_brackets == 6
    assert cls(max_resource=243, mode="optuna").n_brackets == 5
    p = cls(max_resource=27)
    assert {p.bracket_of(i) for i in range(200)} == {0, 1, 2, 3}
    lc = _lc_cls()(dim=2, max_budget=27, seed=3)
    st = kt.Study(lc.space(), searcher=kt.RandomSearch(), pruner=p, seed=0)

    def objective(t):
        x = [t.params["x0"], t.params["x1"]]
        for e in range(1, 28):
            v = lc.value(x, e)
            t.report(e, v)
            if t.should_prune():
                raise kt.study.TrialPruned()
        return v

    st.optimize(objective, n_trials=40)
    pruned = [t for t in st.trials if "pruned" in str(t.state).lower()]
    assert pruned and all(p.bracket_of(t.id) < 3 for t in pruned)  # bracket 3 (s = 3) has no rung below 27


def test_settings_tables_keywords_and_aliases():
    hb = kt.Hyperband("epochs", max_resource=27, eta=3)
    assert hb.config()["resource_name"] == "epochs" and hb.config()["max_resource"] == 27
    assert kt.Hyperband(resource_name="epochs").config() == kt.Hyperband("epochs").config()
    schema = {e["name"]: e for e in kt.Hyperband._settings_schema()}
    assert schema["resource_name"]["positional"] and schema["resource_name"]["required"]
    assert schema["max_resource"]["aliases"] == ["r_l", "R"] and schema["mode"]["choices"] == ["exact", "katib", "hpbandster"]
    # BOHB: HpBandSter's min_budget / max_budget name Hyperband's resources; n_iterations defaults to 0.
    b = kt.make_searcher({"type": "bohb", "resource_name": "epochs", "max_budget": "9", "min_budget": 1})
    assert (b.config()["max_resource"], b.config()["min_resource"], b.config()["n_iterations"]) == (9, 1, 0)
    with pytest.raises(ValueError, match="bohb: setting 'max_resource' is given twice"):
        kt.make_searcher({"type": "bohb", "resource_name": "epochs", "max_budget": 9, "r_l": 9})
    assert kt.PercentilePruner(40.0, n_startup_trials=2).config()["percentile"] == 40.0
    assert kt.PercentilePruner().config()["percentile"] == 25.0
    with pytest.raises(ValueError, match="median_stop: setting 'rule' = \"vizier\" is not one of median, katib"):
        kt.MedianStop(rule="vizier")
    with pytest.raises(ValueError, match="asha: setting 's' = 1.5 must be an integer"):
        kt.make_searcher({"type": "asha", "s": 1.5})
    with pytest.raises(ValueError, match="unknown setting 'max_budget'"):
        kt.make_searcher({"type": "hyperband", "resource_name": "epochs", "max_budget": 9})  # BOHB's name only
    with pytest.raises(TypeError, match="unexpected keyword argument 'eta_'"):
        kt.ASHAPruner(eta_=3)
