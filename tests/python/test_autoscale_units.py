"""The unit naming rule (docs/autoscale.md "Units and names"): new names, deprecated aliases that warn, and the
per-revision progress deadline of the KPA scaler."""
import warnings

import pytest

import kubetune.autoscale as a


def _result(desired):
    r = a.ScaleResult()
    r.desired_pod_count, r.scale_valid = desired, True
    return r


@pytest.mark.parametrize(
    "make, old, new, value",
    [
        (a.KpaConfig, "stable_window", "stable_window_s", 120.0),
        (a.KpaConfig, "panic_threshold_percentage", "panic_threshold_percent", 300.0),
        (a.KpaConfig, "activation_timeout", "activation_timeout_s", 100.0),
        (a.KpaRevision, "window", "window_s", 30.0),
        (a.KpaRevision, "target_utilization_percentage", "target_utilization_percent", 80.0),
        (a.DeciderSpec, "panic_window", "panic_window_s", 3.0),
        (a.HpaControllerConfig, "sync_period", "sync_period_s", 30.0),
        (a.ReplicaCalcConfig, "cpu_initialization_period", "cpu_initialization_period_s", 60.0),
        (a.ScalingRules, "stabilization_window_seconds", "stabilization_window_s", 60.0),
        (a.HpaPod, "metric_window", "metric_window_s", 60.0),
        (a.LatencySlo, "latency", "latency_s", 0.25),
        (a.SimConfig, "service_time", "service_time_s", 0.2),
        (a.SimConfig, "slo_lookback", "slo_lookback_s", 60.0),
    ],
)
def test_deprecated_keyword_and_attribute(make, old, new, value):
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated.*use {new}"):
        obj = make(**{old: value})
    assert getattr(obj, new) == value
    with pytest.warns(DeprecationWarning, match=f"use {new}"):
        assert getattr(obj, old) == value
    with pytest.warns(DeprecationWarning):
        setattr(obj, old, value * 2)
    assert getattr(obj, new) == value * 2
    # The new name is silent.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(make(**{new: value}), new) == value


def test_one_field_under_both_names_is_refused():
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="'stable_window' .deprecated. and"):
        a.KpaConfig(stable_window=60.0, stable_window_s=90.0)
    with pytest.raises(ValueError, match="unknown field 'stable'"):
        a.KpaConfig(stable=60.0)


def test_positional_constructors_and_old_keywords():
    with pytest.warns(DeprecationWarning, match="ScalingPolicy.period_seconds"):
        p = a.ScalingPolicy(type=a.PolicyType.pods, value=2, period_seconds=60)
    assert (p.value, p.period_s) == (2, 60.0)
    assert a.ScalingPolicy(a.PolicyType.percent, 100, 15).period_s == 15.0
    with pytest.warns(DeprecationWarning, match="downscale_stabilization_window"):
        c = a.HpaControllerConfig(downscale_stabilization_window=60.0)
    assert c.downscale_stabilization_window_s == 60.0
    assert a.HpaControllerConfig(60.0, 0.1, 30.0).sync_period_s == 30.0
    with pytest.raises(ValueError, match="slo.latency_s"):
        a.LatencySlo(latency_s=0.0)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="slo.latency_s = -1"):
        a.LatencySlo(latency=-1.0)


def test_metric_collector_takes_seconds():
    assert a.KpaMetricCollector(60.0, panic_window_s=6.0).panic_window_s == 6.0
    assert a.KpaMetricCollector().panic_window_s == 6.0
    with pytest.raises(ValueError, match="panic_window_s = 0.5"):
        a.KpaMetricCollector(60.0, panic_window_s=0.5)
    # The old form took a percentage of the stable window, positionally or by keyword: still read as one.
    with pytest.warns(DeprecationWarning, match="panic_window_percentage"):
        assert a.KpaMetricCollector(60.0, 51.0).panic_window_s == 31.0  # resources/metric_test.go rounding row
    with pytest.warns(DeprecationWarning):
        old = a.KpaMetricCollector(stable_window=120.0, panic_window_percentage=10.0)
    assert old.panic_window_s == 12.0
    with pytest.warns(DeprecationWarning, match="KpaMetricCollector.panic_window is deprecated"):
        assert old.panic_window == 12.0


def test_json_and_simulator_accept_old_keys():
    assert a.KpaConfig.from_json('{"stable_window": 90}').stable_window_s == 90.0
    cfg = a.SimConfig.from_json('{"service_time": 0.2, "slo": {"latency": 0.8}}')
    assert (cfg.service_time_s, cfg.slo.latency_s) == (0.2, 0.8)
    assert '"service_time_s"' in cfg.to_json() and '"service_time"' not in cfg.to_json()
    with pytest.warns(DeprecationWarning) as record:
        configs = a.standard_configs(service_time=0.2, latency=0.8)
    assert sorted(str(w.message).split("(")[1].split("=")[0] for w in record) == ["latency", "service_time"]
    assert configs["kpa"].service_time_s == 0.2 and configs["slo"].slo.latency_s == 0.8
    with pytest.raises(TypeError, match="'servicetime'"):
        a.standard_configs(servicetime=0.2)


def test_revision_progress_deadline():
    # kpa/scaler_test.go:TestScaler/scale to zero while activating after revision deadline exceeded: a "5s"
    # serving.knative.dev/progress-deadline gives an activation timeout of 5 s + 30 s buffer.
    cfg = a.KpaConfig(stable_window_s=300.0, scale_to_zero_grace_period_s=60.0)
    rev = a.KpaRevision(progress_deadline_s=5.0)
    sc = a.KpaScaler(cfg, rev, 0.0, 1)
    assert sc.activation_timeout_s == 35.0
    step = sc.reconcile(20.0, _result(0), 0)
    assert (step.want, step.applied, step.requeue_after_s, step.reason) == (-1, False, 35.0, "Queued")
    step = sc.reconcile(36.0, _result(0), 0)
    # kpa/kpa_test.go:TestReconcile/activation failure: Active=False, reason TimedOut.
    assert (step.applied, step.replicas, step.state, step.reason) == (True, 0, a.PaState.inactive, "TimedOut")
    assert (sc.state_reason, sc.state_since) == ("TimedOut", 36.0)
    assert a.KpaScaler(cfg, a.KpaRevision(), 0.0, 1).activation_timeout_s == 630.0
    with pytest.raises(ValueError, match="progress_deadline_s"):
        a.KpaRevision(progress_deadline_s=0.0)


def test_function_keywords_and_trace():
    want = a.prob_wait_exceeds(14, 10.0, 180.0, 20.0)
    assert a.prob_wait_exceeds(14, 10.0, service_time_s=180.0, t_s=20.0) == want
    with pytest.warns(DeprecationWarning, match="prob_wait_exceeds.service_time is deprecated"):
        assert a.prob_wait_exceeds(14, 10.0, service_time=180.0, t_s=20.0) == want
    assert abs(1.0 - want - 0.88835) < 1e-5  # the published Erlang C check: P(wait <= 20 s) = 0.88835
    pod = a.HpaPod(metric=1000, request=1000, start_time=-1e4, ready_transition_time=-9e3)
    with pytest.warns(DeprecationWarning, match="target_utilization_percent"):
        r = a.resource_utilization_replicas(0.0, 1, target_utilization=50, pods=[pod])
    assert r.replicas == 2  # 100 % used of a 50 % target
    with pytest.raises(TypeError, match="incompatible arguments"):
        a.mean_wait(14, 10.0, servicetime=1.0)
    with pytest.warns(DeprecationWarning) as record:
        t = a.trace_spike(base=1.0, peak=5.0, start=2.0, length=2.0, total=6.0)
    assert len(record) == 2 and list(t.rate) == [1.0, 1.0, 5.0, 5.0, 1.0, 1.0] and t.duration_s == 6.0
    with pytest.warns(DeprecationWarning, match="Trace.dt is deprecated"):
        old = a.Trace([1.0, 2.0], dt=2.0)
    assert old.dt_s == 2.0 and a.Trace([1.0], 3.0).dt_s == 3.0
    with pytest.warns(DeprecationWarning, match="Trace.duration is deprecated"):
        assert old.duration == 4.0
    with pytest.warns(DeprecationWarning, match="BucketWindow.window is deprecated"):
        assert a.BucketWindow(6.0).window == 6.0
    with pytest.warns(DeprecationWarning, match="TICK_INTERVAL_S"):
        assert a.TICK_INTERVAL_SECONDS == a.TICK_INTERVAL_S == 2.0
