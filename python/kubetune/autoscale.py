"""kubetune.autoscale: Knative KPA and Kubernetes HPA maths, Erlang-C latency sizing, and a trace simulator.

Everything numeric lives in C++ (``kubetune._kubetune.autoscale``) and is re-exported here; this module adds
side-by-side comparisons and plots (matplotlib); the demo section is ``kubetune.demo.autoscale``.
"""
from __future__ import annotations

import typing as _typing
import warnings as _warnings

from ._kubetune import autoscale as _native

from ._kubetune.autoscale import (  # the C++ side, re-exported explicitly so type checkers see it
    Aggregation as Aggregation,
    BucketWindow as BucketWindow,
    DeciderSpec as DeciderSpec,
    HpaBehavior as HpaBehavior,
    HpaCondition as HpaCondition,
    HpaConditionType as HpaConditionType,
    HpaController as HpaController,
    HpaControllerConfig as HpaControllerConfig,
    HpaDecision as HpaDecision,
    HpaFleet as HpaFleet,
    HpaPod as HpaPod,
    HpaRecommendation as HpaRecommendation,
    HpaSpec as HpaSpec,
    KpaAutoscaler as KpaAutoscaler,
    KpaConfig as KpaConfig,
    KpaDecider as KpaDecider,
    KpaFleet as KpaFleet,
    KpaMetricCollector as KpaMetricCollector,
    KpaRevision as KpaRevision,
    KpaScaler as KpaScaler,
    LatencySlo as LatencySlo,
    MIN_ACTIVATORS as MIN_ACTIVATORS,
    MaxTimeWindow as MaxTimeWindow,
    Observed as Observed,
    PaState as PaState,
    PodPhase as PodPhase,
    PolicyType as PolicyType,
    REVISION_MAX_CONCURRENCY as REVISION_MAX_CONCURRENCY,
    ReadyCondition as ReadyCondition,
    ReplicaCalcConfig as ReplicaCalcConfig,
    ReplicaResult as ReplicaResult,
    ScaleResult as ScaleResult,
    ScalerStep as ScalerStep,
    ScalingMetric as ScalingMetric,
    ScalingPolicy as ScalingPolicy,
    ScalingRules as ScalingRules,
    SelectPolicy as SelectPolicy,
    SimConfig as SimConfig,
    SimPolicy as SimPolicy,
    SimResult as SimResult,
    Stat as Stat,
    TICK_INTERVAL_S as TICK_INTERVAL_S,
    ThrottlerInput as ThrottlerInput,
    ThrottlerShare as ThrottlerShare,
    Tolerances as Tolerances,
    Trace as Trace,
    WeightedBucketWindow as WeightedBucketWindow,
    aggregate_scrape as aggregate_scrape,
    compute_num_activators as compute_num_activators,
    erlang_b as erlang_b,
    erlang_c as erlang_c,
    external_average_value_replicas as external_average_value_replicas,
    external_value_replicas as external_value_replicas,
    halfin_whitt_beta as halfin_whitt_beta,
    halfin_whitt_delay_probability as halfin_whitt_delay_probability,
    make_decider_spec as make_decider_spec,
    mean_queue_length as mean_queue_length,
    mean_wait as mean_wait,
    min_replicas_for_slo as min_replicas_for_slo,
    min_servers_for_slo as min_servers_for_slo,
    object_average_value_replicas as object_average_value_replicas,
    object_value_replicas as object_value_replicas,
    pick_tracker_indices as pick_tracker_indices,
    pods_metric_replicas as pods_metric_replicas,
    prob_response_exceeds as prob_response_exceeds,
    prob_wait_exceeds as prob_wait_exceeds,
    ready_pod_count as ready_pod_count,
    resolve_initial_scale as resolve_initial_scale,
    resolve_metric_target as resolve_metric_target,
    resource_average_value_replicas as resource_average_value_replicas,
    resource_utilization_replicas as resource_utilization_replicas,
    scrape_sample_size as scrape_sample_size,
    simulate as simulate,
    smoothing_coefficient as smoothing_coefficient,
    sqrt_staffing as sqrt_staffing,
    throttler_share as throttler_share,
    trace_diurnal as trace_diurnal,
    trace_from_csv as trace_from_csv,
    trace_spike as trace_spike,
    trace_steps as trace_steps,
)

if _typing.TYPE_CHECKING:
    from typing import Dict, Mapping, Optional

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = [
    "Aggregation",
    "BucketWindow",
    "DeciderSpec",
    "HpaBehavior",
    "HpaCondition",
    "HpaConditionType",
    "HpaController",
    "HpaControllerConfig",
    "HpaDecision",
    "HpaFleet",
    "HpaPod",
    "HpaRecommendation",
    "HpaSpec",
    "KpaAutoscaler",
    "KpaConfig",
    "KpaDecider",
    "KpaFleet",
    "KpaMetricCollector",
    "KpaRevision",
    "KpaScaler",
    "LatencySlo",
    "MIN_ACTIVATORS",
    "MaxTimeWindow",
    "Observed",
    "PaState",
    "PodPhase",
    "PolicyType",
    "REVISION_MAX_CONCURRENCY",
    "ReadyCondition",
    "ReplicaCalcConfig",
    "ReplicaResult",
    "ScaleResult",
    "ScalerStep",
    "ScalingMetric",
    "ScalingPolicy",
    "ScalingRules",
    "SelectPolicy",
    "SimConfig",
    "SimPolicy",
    "SimResult",
    "Stat",
    "TICK_INTERVAL_S",
    "ThrottlerInput",
    "ThrottlerShare",
    "Tolerances",
    "Trace",
    "WeightedBucketWindow",
    "aggregate_scrape",
    "compute_num_activators",
    "erlang_b",
    "erlang_c",
    "external_average_value_replicas",
    "external_value_replicas",
    "halfin_whitt_beta",
    "halfin_whitt_delay_probability",
    "make_decider_spec",
    "mean_queue_length",
    "mean_wait",
    "min_replicas_for_slo",
    "min_servers_for_slo",
    "object_average_value_replicas",
    "object_value_replicas",
    "pick_tracker_indices",
    "pods_metric_replicas",
    "prob_response_exceeds",
    "prob_wait_exceeds",
    "ready_pod_count",
    "resolve_initial_scale",
    "resolve_metric_target",
    "resource_average_value_replicas",
    "resource_utilization_replicas",
    "scrape_sample_size",
    "simulate",
    "smoothing_coefficient",
    "sqrt_staffing",
    "throttler_share",
    "trace_diurnal",
    "trace_from_csv",
    "trace_spike",
    "trace_steps",
    "standard_configs",
    "compare",
    "summary_table",
    "plot_simulation",
]


# standard_configs' keywords renamed to the unit rule (docs/autoscale.md "Units and names").
_RENAMED_KEYWORDS = {
    "service_time": "service_time_s",
    "pod_startup_delay": "pod_startup_delay_s",
    "latency": "latency_s",
}


def __getattr__(name: str) -> _typing.Any:
    # TICK_INTERVAL_SECONDS became TICK_INTERVAL_S (the unit rule); the old name stays for one release.
    if name == "TICK_INTERVAL_SECONDS":
        _warnings.warn("TICK_INTERVAL_SECONDS is deprecated (removed in the next release); use TICK_INTERVAL_S",
                       DeprecationWarning, stacklevel=2)
        return TICK_INTERVAL_S
    # The demo section moved to kubetune.demo.autoscale (no demo code in library modules).
    if name == "demo_trace":
        _warnings.warn("kubetune.autoscale.demo_trace is deprecated (removed in the next release); use "
                       "kubetune.demo.autoscale.demo_trace", DeprecationWarning, stacklevel=2)
        from .demo.autoscale import demo_trace

        return demo_trace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def standard_configs(
    service_time_s: float = 0.1,
    concurrency: int = 10,
    pod_startup_delay_s: float = 10.0,
    latency_s: float = 0.5,
    quantile: float = 0.95,
    max_replicas: int = 200,
    slo_headroom: float = 1.1,
    **deprecated: float,
) -> Dict[str, "_native.SimConfig"]:
    """Three comparable simulator configs on the same workload model (durations in seconds).

    * ``kpa``: Knative KPA with upstream defaults, ``containerConcurrency = concurrency`` (target 70 %).
    * ``hpa``: HPA on in-flight requests per pod, target 70 % of ``concurrency``, autoscaling/v2 defaults.
    * ``slo``: Erlang-C sizing for P(latency <= ``latency_s``) >= ``quantile`` from the recent peak rate.

    The names without ``_s`` (``service_time``, ``pod_startup_delay``, ``latency``) are deprecated aliases.
    """
    given = dict(service_time_s=service_time_s, pod_startup_delay_s=pod_startup_delay_s, latency_s=latency_s)
    for old, value in deprecated.items():
        new = _RENAMED_KEYWORDS.get(old)
        if new is None:
            raise TypeError(f"standard_configs() got an unexpected keyword argument {old!r}")
        _warnings.warn(f"standard_configs({old}=...) is deprecated (removed in the next release); use {new}",
                       DeprecationWarning, stacklevel=2)
        given[new] = value
    slo = _native.LatencySlo(latency_s=given["latency_s"], quantile=quantile)
    common = dict(
        service_time_s=given["service_time_s"],
        container_concurrency=concurrency,
        pod_startup_delay_s=given["pod_startup_delay_s"],
        slo=slo,
        max_replicas=max_replicas,
    )
    kpa = _native.SimConfig(policy=_native.SimPolicy.kpa, **common)
    kpa.kpa_revision = _native.KpaRevision(container_concurrency=concurrency)
    hpa = _native.SimConfig(policy=_native.SimPolicy.hpa, **common)
    hpa.hpa = _native.HpaSpec(1, max_replicas)
    slo_cfg = _native.SimConfig(policy=_native.SimPolicy.slo, slo_headroom=slo_headroom, **common)
    return {"kpa": kpa, "hpa": hpa, "slo": slo_cfg}


def compare(trace: "_native.Trace", configs: Mapping[str, "_native.SimConfig"]) -> Dict[str, "_native.SimResult"]:
    """Run the same trace through each config; returns {name: SimResult} in the given order."""
    return {name: _native.simulate(trace, cfg) for name, cfg in configs.items()}


def summary_table(results: Mapping[str, "_native.SimResult"]) -> str:
    """A fixed-width table: pod-seconds, mean ready pods, SLO violations, cold starts, scale events."""
    head = f"{'policy':<8} {'pod-seconds':>12} {'mean pods':>10} {'SLO viol. %':>12} {'cold starts':>12} {'scalings':>9}"
    lines = [head, "-" * len(head)]
    for name, r in results.items():
        lines.append(
            f"{name:<8} {r.pod_seconds:>12.0f} {r.mean_ready:>10.2f} {100 * r.slo_violation_fraction:>12.3f} "
            f"{r.cold_starts:>12d} {r.scale_events:>9d}"
        )
    return "\n".join(lines)


def plot_simulation(
    results: Mapping[str, "_native.SimResult"],
    path: Optional[str] = None,
    title: str = "Autoscaling on one trace",
):
    """Plot request rate, ready pods and per-second SLO-miss probability for each run.

    Returns a matplotlib Figure made without pyplot (the backend and pyplot's figures are left alone; a notebook
    shows the returned Figure); saves it to ``path`` when given.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 8))
    axes = fig.subplots(3, 1, sharex=True)
    first = next(iter(results.values()))
    axes[0].plot(first.time, first.rate, color="black", lw=1)
    axes[0].set_ylabel("requests / s")
    axes[0].set_title(title)
    for name, r in results.items():
        label = f"{name} ({r.pod_seconds:.0f} pod-s, {100 * r.slo_violation_fraction:.2f} % SLO miss)"
        axes[1].step(r.time, r.ready, where="post", label=label)
        axes[2].plot(r.time, r.violation_probability, lw=1, label=name)
    axes[1].set_ylabel("ready pods")
    axes[1].legend(loc="upper left", fontsize=8)
    axes[2].set_ylabel("P(latency > SLO)")
    axes[2].set_xlabel("time (s)")
    axes[2].set_ylim(-0.02, 1.02)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig

