// HpaFleet: many HPA controllers of one spec, reconciled in one batch call (the fleet the C API and Python wrap).
// Its state's JSON form is in hpa_state.cpp.
#include <cmath>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"

namespace kubetune::sched::autoscale {

HpaFleet::HpaFleet(const HpaSpec& spec, std::size_t n, const HpaControllerConfig& config)
    : spec_(spec), config_(config) {
  const HpaController proto(spec_, config_);  // validates the spec and the config, also when n == 0
  hpas_.assign(n, proto);
  out_.desired_replicas.resize(n);
  out_.rescale.resize(n);
}

const HpaFleet::Results& HpaFleet::reconcile(double now, const std::int32_t* current_replicas, std::size_t n_current,
                                             const std::int32_t* proposals, std::size_t n_proposals, int n_threads) {
  const std::size_t n = hpas_.size();
  KT_CHECK(std::isfinite(now), InvalidArgument, "HpaFleet.reconcile: now = ", now, " must be finite");
  KT_CHECK(n_current == n, InvalidArgument, "HpaFleet.reconcile: current_replicas has ", n_current,
           " entries, must equal the fleet size ", n);
  KT_CHECK(n_proposals == n, InvalidArgument, "HpaFleet.reconcile: proposals has ", n_proposals,
           " entries, must equal the fleet size ", n);
  KT_CHECK(n == 0 || (current_replicas && proposals), InvalidArgument,
           "HpaFleet.reconcile: current_replicas and proposals must not be null with ", n, " HPAs");
  // hpa_reconcile_batch checks every input before it changes any controller.
  hpa_reconcile_batch(hpas_.data(), n, now, current_replicas, proposals, out_.desired_replicas.data(),
                      out_.rescale.data(), n_threads);
  return out_;
}

const HpaController& HpaFleet::controller(std::size_t i) const {
  KT_CHECK(i < hpas_.size(), InvalidArgument, "HpaFleet: controller ", i, " of ", hpas_.size());
  return hpas_[i];
}

std::vector<HpaController::State> HpaFleet::snapshot() const {
  std::vector<HpaController::State> out;
  out.reserve(hpas_.size());
  for (const HpaController& h : hpas_) out.push_back(h.snapshot());
  return out;
}

void HpaFleet::restore(const std::vector<HpaController::State>& states) {
  KT_CHECK(states.size() == hpas_.size(), InvalidArgument, "HpaFleet state must have ", hpas_.size(),
           " controller states, got ", states.size());
  for (std::size_t i = 0; i < states.size(); ++i) {  // all validated before any is set: all or none
    try {
      states[i].validate();
    } catch (const InvalidArgument& e) {
      KT_THROW(InvalidArgument, "HpaFleet state[", i, "]: ", e.what());
    }
  }
  for (std::size_t i = 0; i < states.size(); ++i) hpas_[i].restore(states[i]);
}

}  // namespace kubetune::sched::autoscale
