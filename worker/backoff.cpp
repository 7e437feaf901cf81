#include "worker/backoff.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace baton::worker {

double backoff_seconds(int retry, double base, double cap, double jitter) {
  if (retry < 1) retry = 1;
  const double d = std::min(base * std::pow(2.0, std::min(retry - 1, 30)), cap);
  return d / 2 + d / 2 * std::clamp(jitter, 0.0, 1.0);
}

double retry_jitter() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace baton::worker
