#pragma once
// Slurm's multifactor priority (priority/multifactor): each factor normalised to 0..1,
// multiplied by its weight, summed, nice subtracted; the result is an integer.
// Defaults are GWDG's weights. Pure: the caller supplies every input.
#include <cstdint>

#include "core/events/domain.hpp"

namespace baton::core {

struct multifactor_weights {
  uint32_t age = 10000;
  uint32_t fairshare = 100000;
  uint32_t job_size = 1000;
  uint32_t partition = 1000000;
  uint32_t qos = 10000;
};

struct multifactor_settings {
  multifactor_weights weights;
  time_us max_age = 5LL * 24 * 3600 * 1000000;  // PriorityMaxAge: age factor 1.0 from here on
  bool favor_small = false;                     // PriorityFavorSmall: fewer GPUs score higher
};

struct multifactor_inputs {
  time_us accrued_age = 0;                                // µs the job has been eligible (not held, not blocked) so far
  double fair_share = 0;                                  // the user association's factor from fair_tree(), 0..1
  uint32_t gpu_count = 1;                                 // the job's request
  uint32_t max_gpu_count = 1;                             // the largest request the system can hold (normalises job size)
  double partition_factor = 1, max_partition_factor = 1;  // the job's partition, the highest configured
  double qos_factor = 0, max_qos_factor = 0;              // the job's QOS, the highest configured
  int64_t nice = 0;                                       // >= 0, subtracted
};

struct priority_factor {
  double raw = 0;         // the input (seconds of age, GPUs, the partition's factor, ...)
  double normalized = 0;  // 0..1
  double weighted = 0;    // normalized × weight
};

struct multifactor_result {
  priority_factor age, fairshare, job_size, partition, qos;
  int64_t nice = 0;
  // Sum of the weighted factors minus nice, truncated to an integer and kept >= 1 as Slurm does.
  int64_t priority = 1;
};

multifactor_result multifactor_priority(const multifactor_inputs& in, const multifactor_settings& s);

}  // namespace baton::core
