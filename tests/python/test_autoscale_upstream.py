"""Upstream-parity values and HPA status conditions through the Python bindings (decisions stay in C++)."""
import json

import pytest

from kubetune import autoscale as a


def test_kpa_values_match_upstream():
    # pkg/deployment ProgressDeadlineDefault 600 s + kpa/scaler.go activationTimeoutBuffer 30 s.
    assert a.KpaConfig().activation_timeout_s == 630.0
    # resources/metric_test.go:TestMakeMetric/with panic window percentage+rounding: 60 s * 51 % -> 31 s.
    assert a.make_decider_spec(a.KpaConfig(), a.KpaRevision(panic_window_percent=51)).panic_window_s == 31.0
    # scaling/autoscaler_test.go specs leave TotalValue and StableWindow at zero.
    spec = a.make_decider_spec()
    spec.total_value = 0.0
    spec.stable_window_s = 0.0
    spec.validate()
    spec.total_value = -1.0
    with pytest.raises(ValueError, match="total_value"):
        spec.validate()


def test_unreachable_revision_skips_scale_down_delay():
    # scaling/autoscaler_test.go:TestAutoscalerScaleDownDelayNotReachable
    rev = a.KpaRevision(target=10.0, target_utilization_percent=100, panic_threshold_percent=1000)
    spec = a.make_decider_spec(a.KpaConfig(scale_down_delay_s=300.0), rev)  # target 10 per pod, no panic at 4x
    d = a.KpaDecider(spec)
    assert d.decide(2.0, 0, 40.0, 40.0).desired_pod_count == 4
    assert d.decide(60.0, 0, 0.0, 0.0).desired_pod_count == 4  # held by the delay window
    spec.reachable = False
    d.update(spec)
    assert d.decide(62.0, 0, 0.0, 0.0).desired_pod_count == 0


def test_external_per_pod_usage_saturates():
    # replica_calculator_test.go:TestReplicaCalcExternalPerPodMetric/replica count overflow saturates to MaxInt32
    r = a.external_average_value_replicas(1, [2**63 - 1], 1)
    assert (r.replicas, r.usage) == (2**31 - 1, 2**63 - 1)


def test_hpa_conditions_scale_up_limit_and_json():
    hpa = a.HpaController(a.HpaSpec(1, 100))
    d = hpa.reconcile(0.0, 3, [60])  # legacy rules: at most max(2 x 3, 4) = 6
    assert d.desired_replicas == 6
    assert [(c.type, c.status, c.reason) for c in d.conditions] == [
        ("AbleToScale", True, "SucceededRescale"),
        ("ScalingActive", True, "ValidMetricFound"),
        ("ScalingLimited", True, "ScaleUpLimit"),
    ]
    limited = d.condition(a.HpaConditionType.scaling_limited)
    assert limited.message == "the desired replica count is increasing faster than the maximum scale rate"
    doc = json.loads(d.to_json())
    assert doc["desired_replicas"] == 6 and doc["conditions"][2]["status"] == "True"


def test_hpa_conditions_disabled_and_within_range():
    # horizontal_test.go:TestZeroReplicas
    d = a.HpaController(a.HpaSpec(3, 5)).reconcile(0.0, 0, [4])
    assert d.condition(a.HpaConditionType.scaling_active).reason == "ScalingDisabled"
    assert d.condition(a.HpaConditionType.scaling_limited) is None
    # Within range, no change: ReadyForNewScale and ScalingLimited False / DesiredWithinRange.
    d = a.HpaController(a.HpaSpec(1, 10)).reconcile(0.0, 4, [4])
    assert not d.rescale
    assert d.condition(a.HpaConditionType.able_to_scale).reason == "ReadyForNewScale"
    lim = d.condition(a.HpaConditionType.scaling_limited)
    assert (lim.status, lim.reason) == (False, "DesiredWithinRange")


def test_hpa_recommendation_history_can_be_read_and_injected():
    # horizontal_test.go:TestMinReplicas runs with an empty history: no initial recommendation holds the scale-down.
    hpa = a.HpaController(a.HpaSpec(2, 5))
    hpa.set_recommendations([])
    d = hpa.reconcile(0.0, 3, [1])
    assert d.desired_replicas == 2
    assert d.condition(a.HpaConditionType.scaling_limited).reason == "TooFewReplicas"
    assert [(r.replicas, r.time) for r in hpa.recommendations] == [(1, 0.0)]
    # A restored history of 3 inside the 300 s window holds the same scale-down.
    held = a.HpaController(a.HpaSpec(2, 5))
    held.set_recommendations([a.HpaRecommendation(3, -10.0)])
    d = held.reconcile(0.0, 3, [1])
    assert not d.rescale
    assert d.condition(a.HpaConditionType.able_to_scale).reason == "ScaleDownStabilized"


def test_hpa_fleet_batch_matches_single_controllers():
    import numpy as np

    spec = a.HpaSpec(1, 50)
    n = 200
    rng = np.random.default_rng(3)
    fleet = a.HpaFleet(spec, n)
    singles = [a.HpaController(spec) for _ in range(n)]
    assert len(fleet) == n
    for step in range(4):
        current = rng.integers(1, 30, n).astype(np.int32)
        proposals = rng.integers(-1, 60, n).astype(np.int32)  # -1: that HPA's metric failed
        out = fleet.reconcile(15.0 * step, current, proposals)
        for i in range(n):
            p = None if proposals[i] < 0 else int(proposals[i])
            d = singles[i].reconcile(15.0 * step, int(current[i]), [p])
            assert out["desired_replicas"][i] == d.desired_replicas
            assert bool(out["rescale"][i]) == d.rescale
    with pytest.raises(ValueError, match="entries"):
        fleet.reconcile(0.0, np.ones(3, np.int32), np.ones(3, np.int32))
    with pytest.raises(ValueError, match=r"current_replicas\[0\]"):
        fleet.reconcile(0.0, np.full(n, -1, np.int32), np.ones(n, np.int32))


def _result(desired):
    r = a.ScaleResult()
    r.desired_pod_count, r.scale_valid = desired, True
    return r


def test_scaler_requeue_and_probe_actions():
    # kpa/scaler_test.go:TestScaler rows (stable window 300 s, grace 60 s), driven through the bindings.
    cfg = a.KpaConfig(stable_window_s=300.0, scale_to_zero_grace_period_s=60.0)
    sc = a.KpaScaler(cfg, a.KpaRevision(), 0.0, 1)
    sc.reconcile(0.0, _result(1), 1)
    # .../waits to scale to zero (just before idle period): keep 1 pod, come back in 1 s.
    step = sc.reconcile(299.0, _result(0), 1)
    assert (step.want, step.applied, step.requeue_after_s, step.probe_activator) == (1, True, 1.0, False)
    step = sc.reconcile(300.0, _result(0), 1)  # .../waits to scale to zero after idle period
    assert step.state == a.PaState.inactive and step.requeue_after_s == -1.0
    # .../scale to zero after grace period, but fail prober: the async probe is asked for, nothing applied.
    probe = a.KpaScaler(cfg, a.KpaRevision(), 0.0, 1)
    probe.reconcile(0.0, _result(1), 1)
    probe.reconcile(300.0, _result(0), 1)
    step = probe.reconcile(360.0, _result(0), 1, activator_probe=False)
    assert step.probe_activator and not step.applied and probe.replicas == 1
    # .../scale to zero after grace period (prober succeeds).
    step = sc.reconcile(360.0, _result(0), 1, activator_probe=True)
    assert step.applied and step.replicas == 0 and not step.probe_activator
    # .../waits to scale to zero while activating until after deadline exceeded: re-enqueue after 630 s.
    step = a.KpaScaler(cfg, a.KpaRevision(), 0.0, 1).reconcile(315.0, _result(0), 0)
    assert (step.want, step.requeue_after_s) == (-1, a.KpaConfig().activation_timeout_s)
