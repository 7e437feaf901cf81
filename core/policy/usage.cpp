#include "core/policy/usage.hpp"

#include <algorithm>
#include <cmath>

namespace baton::core {

namespace {

constexpr double us_per_second = 1e6;

// 2^(-elapsed / half_life); the ratio is unit-free, so both stay in µs.
double halvings(time_us elapsed, time_us half_life) {
  return std::exp2(-static_cast<double>(elapsed) / static_cast<double>(half_life));
}

}  // namespace

double decayed_gpu_seconds(int gpus, time_us start, time_us end, time_us at, time_us half_life) {
  end = std::min(end, at);
  if (gpus <= 0 || end <= start) return 0;
  if (half_life <= 0) return gpus * (static_cast<double>(end - start) / us_per_second);
  // ∫[start,end) 2^(-(at-τ)/h) dτ = h/ln2 · 2^(-(at-end)/h) · (1 - 2^(-(end-start)/h)).
  // The last factor goes through expm1 so a segment short against the half-life keeps its
  // digits (a difference of two near-equal powers would lose them).
  double h_seconds = static_cast<double>(half_life) / us_per_second;
  double ln2 = std::log(2.0);
  double length_in_half_lives = static_cast<double>(end - start) / static_cast<double>(half_life);
  double kept_fraction = -std::expm1(-length_in_half_lives * ln2);
  return gpus * (h_seconds / ln2) * halvings(at - end, half_life) * kept_fraction;
}

double decay(double usage, time_us from, time_us to, time_us half_life) {
  if (half_life <= 0) return usage;
  return usage * halvings(to - from, half_life);
}

}  // namespace baton::core
