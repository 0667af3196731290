"""Tests of kubetune.autoscale: bindings of the KPA/HPA/queueing maths, batch decide, simulator, plots."""
import math

import numpy as np
import pytest

import kubetune as kt

a = kt.autoscale


def test_erlang_c_published_example():
    assert a.erlang_c(14, 10.0) == pytest.approx(0.17413, abs=5e-6)
    assert 1 - a.prob_wait_exceeds(14, 10.0, 180.0, 20.0) == pytest.approx(0.88835, abs=5e-6)
    assert a.mean_wait(14, 10.0, 180.0) == pytest.approx(7.8359, abs=5e-5)
    assert math.isinf(a.mean_wait(10, 10.0, 1.0))


def test_erlang_b_matches_closed_form():
    for c in range(1, 15):
        load = 7.5
        terms = [load**k / math.factorial(k) for k in range(c + 1)]
        assert a.erlang_b(c, load) == pytest.approx(terms[-1] / sum(terms), rel=1e-12)


def test_min_replicas_for_slo_is_minimal():
    slo = a.LatencySlo(latency_s=0.5, quantile=0.95)
    r = a.min_replicas_for_slo(300.0, 0.1, 10, slo)
    assert a.prob_response_exceeds(r * 10, 30.0, 0.1, 0.5) <= 0.05
    assert a.prob_response_exceeds((r - 1) * 10, 30.0, 0.1, 0.5) > 0.05
    with pytest.raises(ValueError, match="quantile"):
        a.LatencySlo(quantile=1.5)
    with pytest.raises(RuntimeError):
        a.min_replicas_for_slo(10.0, 1.0, 1, a.LatencySlo(latency_s=0.1))
    beta = a.halfin_whitt_beta(0.1)
    assert a.halfin_whitt_delay_probability(beta) == pytest.approx(0.1, abs=1e-9)
    assert a.sqrt_staffing(100.0, 1.0) == 110


def test_kpa_config_defaults_and_validation():
    c = a.KpaConfig()
    assert c.target_burst_capacity == 211.0
    assert c.stable_window_s == 60.0
    assert c.max_scale_up_rate == 1000.0
    with pytest.raises(ValueError, match="stable-window"):
        a.KpaConfig(stable_window_s=2.0)
    with pytest.raises(ValueError, match="unknown field"):
        a.KpaConfig(no_such=1)
    with pytest.raises(ValueError, match="target-burst-capacity"):
        a.KpaConfig(target_burst_capacity=-5.0)
    cm = a.KpaConfig.from_configmap({"container-concurrency-target-percentage": "80", "stable-window": "2m"})
    assert cm.container_concurrency_target_fraction == pytest.approx(0.8)
    assert cm.stable_window_s == 120.0
    assert a.KpaConfig.from_json(cm.to_json()).to_json() == cm.to_json()
    target, total = a.resolve_metric_target(a.KpaConfig(), a.KpaRevision(container_concurrency=10))
    assert (target, total) == (pytest.approx(7.0), 10.0)


def test_kpa_decider_panic_and_no_scale_down():
    spec = a.make_decider_spec()
    d = a.KpaDecider(spec)
    r = d.decide(0.0, 2, 100.0, 350.0)
    assert r.panicking and r.desired_pod_count == 5
    r = d.decide(10.0, 5, 70.0, 70.0)
    assert r.panicking and r.desired_pod_count == 5
    r = d.decide(61.0, 5, 70.0, 70.0)
    assert not r.panicking and r.desired_pod_count == 2


def test_kpa_fleet_batch_matches_single_deciders():
    rng = np.random.default_rng(0)
    spec = a.make_decider_spec(a.KpaConfig(), a.KpaRevision(container_concurrency=10))
    n = 2000
    fleet = a.KpaFleet(spec, n)
    singles = [a.KpaDecider(spec) for _ in range(n)]
    for tick in range(5):
        ready = rng.integers(0, 30, n).astype(np.int32)
        stable = rng.uniform(0, 300, n)
        panic = rng.uniform(0, 300, n)
        out = fleet.decide(tick * 2.0, ready, stable, panic, n_threads=1 + tick % 2)
        want = [s.decide(tick * 2.0, int(ready[i]), float(stable[i]), float(panic[i])) for i, s in enumerate(singles)]
        assert np.array_equal(out["desired_pod_count"], [w.desired_pod_count for w in want])
        assert np.array_equal(out["excess_burst_capacity"], [w.excess_burst_capacity for w in want])
        assert np.array_equal(out["panicking"], [w.panicking for w in want])
    with pytest.raises(ValueError, match="entries"):
        fleet.decide(0.0, ready[:5], stable, panic)
    with pytest.raises(ValueError, match="ready_pods_at_start has 3 entries, expected 4"):
        a.KpaFleet(spec, 4, np.zeros(3, dtype=np.int32))


def test_threads_keyword_is_a_deprecated_alias_of_n_threads():
    spec = a.make_decider_spec(a.KpaConfig(), a.KpaRevision(container_concurrency=10))
    fleet, twin = a.KpaFleet(spec, 3), a.KpaFleet(spec, 3)
    ready, stable, panic = np.array([1, 2, 3], dtype=np.int32), np.array([5.0, 50.0, 500.0]), np.array([5.0] * 3)
    with pytest.warns(DeprecationWarning, match=r"KpaFleet.decide\(threads=...\) is deprecated.*n_threads="):
        old = fleet.decide(0.0, ready, stable, panic, threads=2)
    new = twin.decide(0.0, ready, stable, panic, n_threads=2)
    assert np.array_equal(old["desired_pod_count"], new["desired_pod_count"])
    with pytest.raises(TypeError, match=r"KpaFleet.decide\(\) got both n_threads= and its deprecated alias threads="):
        fleet.decide(2.0, ready, stable, panic, n_threads=1, threads=1)
    hpa = a.HpaFleet(a.HpaSpec(1, 10), 2)
    with pytest.warns(DeprecationWarning, match=r"HpaFleet.reconcile\(threads=...\)"):
        hpa.reconcile(0.0, np.array([1, 1], dtype=np.int32), np.array([2, -1], dtype=np.int32), threads=1)


def test_kpa_scale_to_zero_after_grace():
    sc = a.KpaScaler(a.KpaConfig(), a.KpaRevision())
    one = a.ScaleResult()
    one.desired_pod_count, one.scale_valid = 1, True
    zero = a.ScaleResult()
    zero.desired_pod_count, zero.scale_valid = 0, True
    assert sc.reconcile(0.0, one, 1).state == a.PaState.active
    assert sc.reconcile(30.0, zero, 1).replicas == 1
    step = sc.reconcile(60.0, zero, 1)
    assert step.state == a.PaState.inactive and not step.applied
    assert not sc.reconcile(89.0, zero, 1).applied
    assert sc.reconcile(90.0, zero, 1).replicas == 0


def test_windows_and_scrape():
    w = a.BucketWindow(5.0)
    for t, v in [(0, 1.0), (1, 2.0), (2, 3.0)]:
        w.record(t, v)
    assert w.window_average(2.0) == 2.0
    ww = a.WeightedBucketWindow(4.0)
    assert ww.smoothing_coefficient == pytest.approx(0.9)
    assert a.scrape_sample_size(10) == 7
    s = a.aggregate_scrape(0.0, [a.Stat(concurrency=2.0), a.Stat(concurrency=4.0)], 10)
    assert s.concurrency == 30.0


def test_hpa_calculator_and_behaviour():
    def pod(usage, **kw):
        return a.HpaPod(metric=usage, request=1000, start_time=-1e4, ready_transition_time=-9e3, **kw)

    pods = [pod(300, ready=a.ReadyCondition.false), pod(500), pod(700)]
    pods[0].start_time = -10.0
    r = a.resource_utilization_replicas(0.0, 3, 30, pods)
    assert r.valid and r.replicas == 4
    missing = [pod(100), pod(100), pod(100), pod(0, has_metric=False)]
    assert a.resource_utilization_replicas(0.0, 4, 50, missing).replicas == 3
    assert a.object_value_replicas(2, 300, 100, 2).replicas == 6
    bad = a.resource_utilization_replicas(0.0, 1, 50, [pod(0, has_metric=False)])
    assert not bad.valid and "did not receive metrics" in bad.error
    hpa = a.HpaController(a.HpaSpec(1, 100, a.HpaBehavior()))
    assert hpa.reconcile(0.0, 1, [40]).desired_replicas == 5  # max(4 pods, 100 %) per 15 s
    assert not hpa.reconcile(10.0, 5, [40, None]).rescale
    assert hpa.reconcile(16.0, 5, [a.object_value_replicas(5, 800, 100, 5)]).desired_replicas == 10
    legacy = a.HpaController(a.HpaSpec(1, 100))
    assert legacy.reconcile(0.0, 1, [50]).desired_replicas == 4
    with pytest.raises(ValueError, match="maxReplicas"):
        a.HpaSpec(5, 2)
    rules = a.ScalingRules(select_policy=a.SelectPolicy.min, policies=[a.ScalingPolicy(a.PolicyType.pods, 1, 60)])
    assert a.HpaController(a.HpaSpec(1, 10, a.HpaBehavior(scale_up=rules))).reconcile(0.0, 2, [9]).desired_replicas == 3


def test_simulate_compare_and_plot(tmp_path):
    trace = a.trace_steps([(120, 100.0), (120, 300.0), (180, 0.0)])
    results = a.compare(trace, a.standard_configs(max_replicas=50))
    assert set(results) == {"kpa", "hpa", "slo"}
    for r in results.values():
        assert len(r.ready) == len(trace)
        assert r.pod_seconds == pytest.approx(float(np.sum(r.provisioned)))
        assert 0.0 <= r.slo_violation_fraction <= 1.0
    assert results["kpa"].ready[-1] == 0  # KPA scales to zero in the idle tail, the HPA cannot
    assert results["hpa"].ready[-1] >= 1
    table = a.summary_table(results)
    assert "pod-seconds" in table and "kpa" in table
    fig = a.plot_simulation(results, path=str(tmp_path / "sim.png"))
    assert (tmp_path / "sim.png").stat().st_size > 1000
    import matplotlib.pyplot as plt

    plt.close(fig)
    cfg = a.SimConfig.from_json(results and a.standard_configs()["slo"].to_json())
    assert cfg.policy == a.SimPolicy.slo
    with pytest.raises(ValueError, match="service_time_s"):
        a.SimConfig(service_time_s=0.0)
    with pytest.raises(ValueError, match="rate"):
        a.Trace(np.array([1.0, -1.0]))


def test_trace_csv(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("time,rate\n0,5\n10,6\n")
    t = a.trace_from_csv(str(p))
    assert list(t.rate) == [5.0, 6.0] and t.dt_s == 10.0
    with pytest.raises(OSError):
        a.trace_from_csv(str(tmp_path / "missing.csv"))


def test_demo_prints_table(capsys):
    from kubetune.demo import autoscale as demo_autoscale

    demo_autoscale.run(quick=True)
    out = capsys.readouterr().out
    assert "kpa" in out and "hpa" in out and "slo" in out and "0.17413" in out


def test_every_native_name_is_reexported():
    from kubetune import _kubetune
    import kubetune.autoscale as autoscale
    native = {n for n in dir(_kubetune.autoscale) if not n.startswith("_")}
    assert native <= set(autoscale.__all__)
    assert all(getattr(autoscale, n) is getattr(_kubetune.autoscale, n) for n in native)
