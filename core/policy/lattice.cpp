#include "core/policy/lattice.hpp"

#include <algorithm>
#include <cmath>

namespace baton::core {

namespace {

double clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

struct profile_entry {
  lattice_profile profile;
  const char* name;
  lattice_weights weights;
};

//                                       w1    w2    w3    w4    w5    w6    w7    w8    w9
const profile_entry profiles[] = {
    {lattice_profile::balanced, "balanced", {0.20, 0.20, 0.20, 0.15, 0.10, 0.05, 0.00, 0.00, 0.10}},
    {lattice_profile::hpc_batch, "hpc_batch", {0.15, 0.20, 0.20, 0.15, 0.10, 0.05, 0.00, 0.05, 0.10}},
    {lattice_profile::ml_training, "ml_training", {0.10, 0.10, 0.10, 0.25, 0.15, 0.05, 0.05, 0.10, 0.10}},
    {lattice_profile::service, "service", {0.15, 0.05, 0.10, 0.05, 0.10, 0.05, 0.10, 0.10, 0.30}},
    {lattice_profile::sensitive, "sensitive", {0.90, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.10}},
    {lattice_profile::interactive, "interactive", {0.10, 0.30, 0.10, 0.00, 0.05, 0.15, 0.00, 0.00, 0.30}},
};

const profile_entry& entry_of(lattice_profile p) {
  for (const auto& e : profiles)
    if (e.profile == p) return e;
  return profiles[0];
}

// f2 grows without bound, but slowly: one reference wait is ln 2, e-1 of them is 1.
double wait_factor(double wait, double reference) {
  if (reference <= 0 || wait <= 0) return 0;
  return std::log1p(wait / reference);
}

double fair_share_deficit(double target, double actual) {
  if (target <= 0) return 0;
  return clamp01(std::max(0.0, target - actual) / target);
}

double backlog_factor(double queued, double running) {
  if (queued <= 0) return 0;
  if (running <= 0) return 1;
  return std::min(1.0, queued / running);
}

double checkpoint_factor(const std::optional<double>& minutes) {
  if (!minutes) return 0.5;
  return 1.0 / (1.0 + std::max(0.0, *minutes));
}

}  // namespace

const char* to_string(lattice_profile p) { return entry_of(p).name; }

std::optional<lattice_profile> lattice_profile_from(const std::string& s) {
  for (const auto& e : profiles)
    if (s == e.name) return e.profile;
  return std::nullopt;
}

lattice_weights weights_of(lattice_profile p) { return entry_of(p).weights; }

lattice_result lattice_score(const lattice_inputs& in, const lattice_weights& w) {
  lattice_result r;
  r.f = {clamp01(in.priority_class / 10),
         wait_factor(in.wait_seconds, in.reference_wait_seconds),
         fair_share_deficit(in.target_share, in.actual_share),
         clamp01(in.topology_fitness),
         clamp01(in.data_readiness),
         backlog_factor(in.queued_gpu_hours, in.running_gpu_hours),
         clamp01(1 - in.normalized_energy_price),
         checkpoint_factor(in.checkpoint_minutes),
         clamp01(in.conformance)};
  for (size_t i = 0; i < r.f.size(); ++i) {
    r.weighted[i] = w[i] * r.f[i];
    r.score += r.weighted[i];
  }
  return r;
}

}  // namespace baton::core
