#include "core/policy/multifactor.hpp"

#include <algorithm>
#include <cmath>

namespace baton::core {

namespace {

double clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

priority_factor weigh(double raw, double normalized, uint32_t weight) {
  return {raw, normalized, normalized * static_cast<double>(weight)};
}

// Below max_age the share of it already waited; from max_age on 1.0 (Slurm compares
// `age < max_age`, so a max_age of 0 gives every job 1.0).
double age_factor(time_us age, time_us max_age) {
  if (age <= 0) return 0;
  if (age < max_age) return static_cast<double>(age) / static_cast<double>(max_age);
  return 1;
}

// Slurm's job size factor over nodes and CPUs, with GPUs as the one dimension: favouring
// large jobs it is the share of the system asked for; PriorityFavorSmall turns it into the
// share left over, (max - gpus) / max, which is 0 for a job that asks for everything.
double job_size_factor(uint32_t gpus, uint32_t max_gpus, bool favor_small) {
  if (max_gpus == 0) return 0;
  double share = static_cast<double>(gpus) / static_cast<double>(max_gpus);
  return clamp01(favor_small ? 1.0 - share : share);
}

// Slurm normalises partitions and QOSes by the highest configured value.
double relative_factor(double factor, double max_factor) {
  if (max_factor <= 0) return 0;
  return clamp01(factor / max_factor);
}

}  // namespace

multifactor_result multifactor_priority(const multifactor_inputs& in, const multifactor_settings& s) {
  multifactor_result r;
  const auto& w = s.weights;
  r.age = weigh(static_cast<double>(in.accrued_age) / 1e6, age_factor(in.accrued_age, s.max_age), w.age);
  r.fairshare = weigh(in.fair_share, clamp01(in.fair_share), w.fairshare);
  r.job_size = weigh(in.gpu_count, job_size_factor(in.gpu_count, in.max_gpu_count, s.favor_small), w.job_size);
  r.partition = weigh(in.partition_factor, relative_factor(in.partition_factor, in.max_partition_factor), w.partition);
  r.qos = weigh(in.qos_factor, relative_factor(in.qos_factor, in.max_qos_factor), w.qos);
  r.nice = in.nice;

  // Summed in Slurm's order as a double, so the same inputs round the same way.
  double sum = r.age.weighted + r.fairshare.weighted + r.job_size.weighted + r.partition.weighted + r.qos.weighted -
               static_cast<double>(in.nice);
  if (sum < 1) sum = 1;                          // 0 is Slurm's "held"
  constexpr double max_priority = 4294967295.0;  // Slurm's priority is a uint32_t
  r.priority = static_cast<int64_t>(std::min(std::trunc(sum), max_priority));
  return r;
}

}  // namespace baton::core
