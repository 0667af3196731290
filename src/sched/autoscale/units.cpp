// The deprecated field names of the autoscale module and their replacements (kept for one release).
#include "kubetune/sched/autoscale/units.hpp"

#include <cstring>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::autoscale {

namespace {
// Durations became `<name>_s`; percentages kept only where upstream's key is one and became `<name>_percent`.
constexpr RenamedField kRenamed[] = {
    {"KpaConfig", "stable_window", "stable_window_s"},
    {"KpaConfig", "panic_window_percentage", "panic_window_percent"},
    {"KpaConfig", "panic_threshold_percentage", "panic_threshold_percent"},
    {"KpaConfig", "scale_to_zero_grace_period", "scale_to_zero_grace_period_s"},
    {"KpaConfig", "scale_to_zero_pod_retention_period", "scale_to_zero_pod_retention_period_s"},
    {"KpaConfig", "scale_down_delay", "scale_down_delay_s"},
    {"KpaConfig", "activation_timeout", "activation_timeout_s"},
    {"KpaRevision", "target_utilization_percentage", "target_utilization_percent"},
    {"KpaRevision", "window", "window_s"},
    {"KpaRevision", "panic_window_percentage", "panic_window_percent"},
    {"KpaRevision", "panic_threshold_percentage", "panic_threshold_percent"},
    {"KpaRevision", "scale_down_delay", "scale_down_delay_s"},
    {"KpaRevision", "scale_to_zero_pod_retention_period", "scale_to_zero_pod_retention_period_s"},
    {"DeciderSpec", "stable_window", "stable_window_s"},
    {"DeciderSpec", "panic_window", "panic_window_s"},
    {"DeciderSpec", "scale_down_delay", "scale_down_delay_s"},
    {"KpaMetricCollector", "panic_window", "panic_window_s"},
    {"ScalingPolicy", "period_seconds", "period_s"},
    {"ScalingRules", "stabilization_window_seconds", "stabilization_window_s"},
    {"HpaControllerConfig", "downscale_stabilization_window", "downscale_stabilization_window_s"},
    {"HpaControllerConfig", "sync_period", "sync_period_s"},
    {"ReplicaCalcConfig", "cpu_initialization_period", "cpu_initialization_period_s"},
    {"ReplicaCalcConfig", "delay_of_initial_readiness_status", "delay_of_initial_readiness_status_s"},
    {"HpaPod", "metric_window", "metric_window_s"},
    {"LatencySlo", "latency", "latency_s"},
    {"SimConfig", "service_time", "service_time_s"},
    {"SimConfig", "pod_startup_delay", "pod_startup_delay_s"},
    {"SimConfig", "hpa_metric_window", "hpa_metric_window_s"},
    {"SimConfig", "slo_interval", "slo_interval_s"},
    {"SimConfig", "slo_lookback", "slo_lookback_s"},
    {"Trace", "dt", "dt_s"},
    {"Trace", "duration", "duration_s"},
    {"BucketWindow", "window", "window_s"},
    // Keywords of functions (Python).
    {"resource_utilization_replicas", "target_utilization", "target_utilization_percent"},
    {"prob_wait_exceeds", "service_time", "service_time_s"},
    {"prob_wait_exceeds", "t", "t_s"},
    {"mean_wait", "service_time", "service_time_s"},
    {"prob_response_exceeds", "service_time", "service_time_s"},
    {"prob_response_exceeds", "t", "t_s"},
    {"min_servers_for_slo", "service_time", "service_time_s"},
    {"min_replicas_for_slo", "service_time", "service_time_s"},
    {"trace_steps", "dt", "dt_s"},
    {"trace_spike", "length", "length_s"},
    {"trace_spike", "total", "total_s"},
    {"trace_spike", "dt", "dt_s"},
    {"trace_diurnal", "period", "period_s"},
    {"trace_diurnal", "total", "total_s"},
    {"trace_diurnal", "dt", "dt_s"},
};
}  // namespace

std::span<const RenamedField> renamed_fields() { return kRenamed; }

void rename_deprecated_keys(const char* type, nlohmann::json& object) {
  if (!object.is_object()) return;
  for (const RenamedField& f : kRenamed) {
    if (std::strcmp(f.type, type) != 0 || !object.contains(f.old_name)) continue;
    KT_CHECK(!object.contains(f.new_name), InvalidArgument, type, " JSON: '", f.old_name, "' (deprecated) and '",
             f.new_name, "' are the same field; give one");
    object[f.new_name] = std::move(object[f.old_name]);
    object.erase(f.old_name);
  }
}

}  // namespace kubetune::sched::autoscale
