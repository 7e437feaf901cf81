#pragma once
// Lattice's composite score: Score(j) = Σ wᵢ·fᵢ(j), nine factors, six built-in
// weight profiles. Pure: the caller maps baton's world onto the inputs (docs/scheduling.md
// says how each factor is read in baton).
#include <array>
#include <optional>
#include <string>

namespace baton::core {

enum class lattice_profile { balanced, hpc_batch, ml_training, service, sensitive, interactive };
const char* to_string(lattice_profile p);                                   // "balanced", "hpc_batch", ...
std::optional<lattice_profile> lattice_profile_from(const std::string& s);  // the same names

using lattice_weights = std::array<double, 9>;  // w1..w9
lattice_weights weights_of(lattice_profile p);

struct lattice_inputs {
  double priority_class = 0;  // 0..10 (f1 = priority_class / 10)
  double wait_seconds = 0;    // f2 = log(1 + wait / reference_wait)
  double reference_wait_seconds = 3600;
  double target_share = 0;  // f3 = max(0, target - actual) / target; 0 when target is 0
  double actual_share = 0;
  double topology_fitness = 1;  // f4, 0..1, computed by the caller
  double data_readiness = 0.5;  // f5, 0..1; 0.5 when unknown
  double queued_gpu_hours = 0;  // f6 = min(1, queued / running); 1 when running is 0 and queued > 0, 0 when both are 0
  double running_gpu_hours = 0;
  double normalized_energy_price = 0.5;      // f7 = 1 - price, price 0..1
  std::optional<double> checkpoint_minutes;  // f8 = 1 / (1 + minutes); 0.5 when unknown
  double conformance = 1;                    // f9, 0..1
};

struct lattice_result {
  std::array<double, 9> f{};         // f1..f9
  std::array<double, 9> weighted{};  // wᵢ·fᵢ
  double score = 0;
};

lattice_result lattice_score(const lattice_inputs& in, const lattice_weights& w);

}  // namespace baton::core
