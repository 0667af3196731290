"""Persisting the KPA's state machines across restarts: snapshot() -> JSON file -> restore() continues decision for
decision; the PodAutoscaler states upstream's tests start from can be set directly; bad states are ValueErrors."""
import json

import numpy as np
import pytest

import kubetune.autoscale as a


def _result(desired, ebc=0):
    r = a.ScaleResult()
    r.desired_pod_count, r.excess_burst_capacity, r.scale_valid = desired, ebc, desired >= 0
    return r


def _step_fields(st):
    return (st.want, st.applied, st.replicas, st.proxy_mode, st.state, st.reason, st.requeue_after_s,
            st.probe_activator)


def _drive(autoscaler, ticks):
    out = []
    for k in ticks:
        t = 2.0 * k
        conc = 3.0 * k if k < 15 else 60.0 if k < 30 else 0.0
        if conc:
            autoscaler.record(a.Stat(time=t, concurrency=conc))
        out.append(_step_fields(autoscaler.tick(t, max(1, int(conc / 20)))))  # pods lag the load
    return out


def test_autoscaler_restored_from_a_file_ticks_as_the_original(tmp_path):
    config = a.KpaConfig(stable_window_s=20.0, scale_down_delay_s=8.0, scale_to_zero_grace_period_s=6.0)
    revision = a.KpaRevision(container_concurrency=10)
    original = a.KpaAutoscaler(config, revision)
    _drive(original, range(0, 18))
    state = original.snapshot()
    assert state["decider"]["panicking"]  # the split falls inside a panic, with a delay window
    assert state["decider"]["delay_window"]
    path = tmp_path / "pa.json"
    path.write_text(json.dumps(state))
    restored = a.KpaAutoscaler(config, revision, now=500.0, initial_replicas=3)  # "after a restart"
    restored.restore(json.loads(path.read_text()))
    assert restored.snapshot() == state
    assert _drive(restored, range(18, 60)) == _drive(original, range(18, 60))


def test_fleet_restore_continues_identically():
    spec = a.make_decider_spec(a.KpaConfig(scale_down_delay_s=10.0), a.KpaRevision(container_concurrency=10))
    f1, f2 = a.KpaFleet(spec, 3), a.KpaFleet(spec, 3)
    ready = np.array([1, 4, 10], dtype=np.int32)
    first = f1.decide(0.0, ready, np.array([7.0, 28.0, 0.0]), np.array([70.0, 28.0, 0.0]))
    assert first["panicking"].tolist() == [True, False, False]
    f2.restore(json.dumps(f1.snapshot()))
    zeros = np.zeros(3)
    for k in range(1, 41):
        r1, r2 = f1.decide(2.0 * k, ready, zeros, zeros), f2.decide(2.0 * k, ready, zeros, zeros)
        for key in r1:
            assert r1[key].tolist() == r2[key].tolist(), (k, key)
    with pytest.raises(ValueError, match=r"array of 3 decider states, got 2 entries"):
        f2.restore(f1.snapshot()[:2])


def test_inactive_pa_with_min_scale_set_directly():
    # knative kpa_test.go:TestReconcile/want=1, underscaled, PA inactive: min-scale 11, 10 pods ready.
    scaler = a.KpaScaler(a.KpaConfig(), a.KpaRevision(min_scale=11), initial_replicas=10)
    scaler.restore({"pa_state": "inactive", "reason": "NoTraffic", "since_s": 0.0, "scale_target_initialized": True,
                    "proxy_mode": True, "proxy_since_s": 0.0, "replicas": 10})
    assert scaler.state == a.PaState.inactive
    st = scaler.reconcile(10.0, _result(1), 10)
    assert (st.replicas, st.applied, st.state, st.reason, st.proxy_mode) == (11, True, a.PaState.activating,
                                                                            "Queued", False)
    # kpa_test.go:TestReconcile/want=-1, underscaled, PA inactive: no data is a no-op.
    scaler.restore({"pa_state": "inactive", "reason": "NoTraffic", "since_s": 0.0, "scale_target_initialized": True,
                    "proxy_mode": True, "proxy_since_s": 0.0, "replicas": 10})
    st = scaler.reconcile(10.0, _result(-1), 10)
    assert (st.replicas, st.applied, st.state) == (10, False, a.PaState.inactive)


def test_failed_probe_after_grace_period_set_directly():
    # kpa/scaler_test.go:TestScaler/scale to zero after grace period, but fail prober: inactive for the grace period.
    config = a.KpaConfig(stable_window_s=300.0, scale_to_zero_grace_period_s=60.0)
    scaler = a.KpaScaler(config, a.KpaRevision())
    scaler.restore(json.dumps({"pa_state": "inactive", "reason": "NoTraffic", "since_s": 940.0,
                               "scale_target_initialized": True, "proxy_mode": False, "proxy_since_s": 940.0,
                               "replicas": 1}))
    st = scaler.reconcile(1000.0, _result(0), 1, activator_probe=False)
    assert (st.want, st.applied, st.probe_activator) == (0, False, True)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"replicas": -1}, r"KpaScaler state\.replicas = -1 must be in \[0, 2147483647\]"),
        ({"pa_state": "ready"}, r"pa_state = 'ready' must be 'activating', 'active' or 'inactive'"),
        ({"reason": "NoTraffic"}, r"reason = 'NoTraffic' is not a reason of pa_state = 'activating'"),
        ({"since_s": None}, r"since_s = null must be a finite number"),
        ({"extra": 1}, r"unknown key 'extra'"),
    ],
)
def test_bad_scaler_states_are_value_errors_and_change_nothing(change, message):
    scaler = a.KpaScaler(a.KpaConfig(), a.KpaRevision())
    before = scaler.snapshot()
    with pytest.raises(ValueError, match=message):
        scaler.restore({**before, **change})
    assert scaler.snapshot() == before


def test_decider_and_collector_states():
    spec = a.make_decider_spec()
    decider = a.KpaDecider(spec)
    decider.restore({"panicking": True, "panic_time_s": 100.0, "max_panic_pods": 9, "delay_window": []})
    assert decider.decide(102.0, 9, 70.0, 70.0).desired_pod_count == 9
    with pytest.raises(ValueError, match=r"delay_window has 1 entries but the spec's scale_down_delay_s = 0"):
        decider.restore({"panicking": False, "panic_time_s": 0.0, "max_panic_pods": 0,
                         "delay_window": [{"time_s": 0.0, "pods": 1}]})
    c1 = a.KpaMetricCollector(60.0, panic_window_s=6.0)
    for t in range(30):
        c1.record(a.Stat(time=float(t), concurrency=float(t % 7)))
    c2 = a.KpaMetricCollector(60.0, panic_window_s=6.0)
    c2.restore(c1.snapshot())
    o1, o2 = c1.concurrency(40.0), c2.concurrency(40.0)
    assert (o1.stable, o1.panic, o1.has_data) == (o2.stable, o2.panic, o2.has_data)
    with pytest.raises(ValueError, match=r"concurrency_stable: buckets has 60 values, the window has 30"):
        a.KpaMetricCollector(30.0, panic_window_s=6.0).restore(c1.snapshot())


def test_hpa_history_and_scale_events_persisted_and_injected():
    # 4 pods per 30 s upwards: the scale-up events kept decide how far the next scale-up may go.
    spec = a.HpaSpec.from_json('{"minReplicas": 1, "maxReplicas": 50, "behavior": {"scaleUp": {'
                               '"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 4, '
                               '"periodSeconds": 30}]}}}')
    original = a.HpaController(spec)
    current = 2
    for k in range(6):
        current = original.reconcile(15.0 * k, current, [40]).desired_replicas
    state = original.snapshot()
    assert state["scale_up_events"] and state["history_started"]
    restored = a.HpaController(spec)
    restored.restore(json.dumps(state))
    c1 = c2 = current
    for k in range(6, 20):
        d1, d2 = original.reconcile(15.0 * k, c1, [40 - k]), restored.reconcile(15.0 * k, c2, [40 - k])
        assert d1.to_json() == d2.to_json()
        c1, c2 = d1.desired_replicas, d2.desired_replicas
    with pytest.raises(ValueError, match=r"scale_up_events\[0\]\.change = -1 must be in \[0, 2147483647\]"):
        restored.restore({**state, "scale_up_events": [{"change": -1, "time_s": 0.0, "outdated": False}]})


_HPA_FLEET_SPEC = ('{"minReplicas": 1, "maxReplicas": 40, "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, '
                   '"policies": [{"type": "Pods", "value": 3, "periodSeconds": 30}]}, "scaleDown": '
                   '{"stabilizationWindowSeconds": 60}}}')


def _hpa_fleet_inputs(rng, n):
    current = rng.integers(1, 30, n).astype(np.int32)
    proposals = rng.integers(-1, 45, n).astype(np.int32)  # -1: that HPA's metric failed
    return current, proposals


def test_hpa_fleet_restored_from_a_file_reconciles_as_the_original(tmp_path):
    spec = a.HpaSpec.from_json(_HPA_FLEET_SPEC)
    n = 6
    original = a.HpaFleet(spec, n)
    singles = [a.HpaController(spec) for _ in range(n)]
    rng = np.random.default_rng(7)
    for k in range(5):
        current, proposals = _hpa_fleet_inputs(rng, n)
        original.reconcile(15.0 * k, current, proposals)
        for i, h in enumerate(singles):
            h.reconcile(15.0 * k, int(current[i]), [None if proposals[i] < 0 else int(proposals[i])])
    state = original.snapshot()
    assert isinstance(state, list) and len(state) == n
    assert state == [h.snapshot() for h in singles]  # one HpaController state per HPA, in fleet order
    assert any(s["scale_up_events"] for s in state)
    path = tmp_path / "hpas.json"
    path.write_text(json.dumps(state))
    restored = a.HpaFleet(spec, n)
    restored.restore(json.loads(path.read_text()))
    assert restored.snapshot() == state
    twin = a.HpaFleet(spec, n)
    twin.restore(path.read_text())  # the JSON string works too
    for k in range(5, 25):
        current, proposals = _hpa_fleet_inputs(rng, n)
        r1 = original.reconcile(15.0 * k, current, proposals)
        r2 = restored.reconcile(15.0 * k, current, proposals, n_threads=2)
        r3 = twin.reconcile(15.0 * k, current, proposals)
        for key in ("desired_replicas", "rescale"):
            assert r1[key].tolist() == r2[key].tolist() == r3[key].tolist(), (k, key)
        assert r1["rescale"].dtype == np.bool_
    assert restored.snapshot() == original.snapshot()


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda s: s[1]["recommendations"][0].update(replicas=-1),
         r"HpaFleet state\[1\]: HpaController state\.recommendations\[0\]\.replicas = -1 must be in \[0, 2147483647\]"),
        (lambda s: s[2].update(history_started="yes"),
         r"HpaFleet state\[2\]: HpaController state\.history_started = \"yes\" must be true or false"),
        (lambda s: s[0].pop("scale_up_events"),
         r"HpaFleet state\[0\]: HpaController state: missing key 'scale_up_events'"),
        (lambda s: s[0].update(extra=1), r"HpaFleet state\[0\]: HpaController state: unknown key 'extra'"),
        (lambda s: s.pop(), r"HpaFleet state must be an array of 3 controller states, got 2 entries"),
    ],
)
def test_bad_hpa_fleet_states_are_value_errors_and_change_nothing(corrupt, message):
    spec = a.HpaSpec.from_json(_HPA_FLEET_SPEC)
    source = a.HpaFleet(spec, 3)
    source.reconcile(0.0, np.array([2, 5, 9], np.int32), np.array([8, 1, -1], np.int32))
    state = source.snapshot()
    corrupt(state)
    fleet = a.HpaFleet(spec, 3)
    before = fleet.snapshot()
    with pytest.raises(ValueError, match=message):
        fleet.restore(state)
    assert fleet.snapshot() == before


def test_hpa_fleet_inputs_are_checked():
    fleet = a.HpaFleet(a.HpaSpec(1, 10), 3)
    before = fleet.snapshot()
    with pytest.raises(ValueError, match=r"current_replicas has 2 entries, must equal the fleet size 3"):
        fleet.reconcile(0.0, np.ones(2, np.int32), np.ones(3, np.int32))
    with pytest.raises(ValueError, match=r"proposals has 4 entries, must equal the fleet size 3"):
        fleet.reconcile(0.0, np.ones(3, np.int32), np.ones(4, np.int32))
    with pytest.raises(ValueError, match=r"now = nan must be finite"):
        fleet.reconcile(float("nan"), np.ones(3, np.int32), np.ones(3, np.int32))
    with pytest.raises(ValueError, match=r"HpaFleet state JSON"):
        fleet.restore("[1,")
    assert fleet.snapshot() == before == [{"history_started": False, "recommendations": [], "scale_up_events": [],
                                           "scale_down_events": []}] * 3
    with pytest.raises(ValueError, match="maxReplicas"):
        a.HpaFleet(a.HpaSpec(1, 0), 0)
