#include "core/planning/deadline.hpp"
#include "core/events/event_types.hpp"

namespace baton::core {

ev::deadline_rule_record to_record(const deadline_rule& r) {
  ev::deadline_rule_record out;
  out.default_time_limit_seconds = r.default_time_limit_seconds;
  out.min_useful_seconds = r.min_useful_seconds;
  return out;
}

deadline_rule rule_of(const ev::deadline_rule_record& r) {
  deadline_rule out;
  out.default_time_limit_seconds = r.default_time_limit_seconds.value_or(out.default_time_limit_seconds);
  out.min_useful_seconds = r.min_useful_seconds.value_or(out.min_useful_seconds);
  return out;
}

deadline_rule rule_of(const deadline_fit_record& r) {
  ev::deadline_rule_record rule;
  rule.default_time_limit_seconds = r.default_time_limit_seconds;
  rule.min_useful_seconds = r.min_useful_seconds;
  return rule_of(rule);
}

constexpr time_us us_per_second = 1'000'000;

int64_t time_limit_of(const std::optional<int64_t>& limit, const deadline_rule& r) {
  return limit.value_or(r.default_time_limit_seconds);
}

int64_t time_limit_of(const job& j, const deadline_rule& r) { return time_limit_of(j.time_limit_seconds, r); }

std::optional<time_us> expected_end(const job& j, const deadline_rule& r) {
  if (j.segments.empty() || j.segments.back().ended_at) return std::nullopt;
  return j.segments.back().started_at + time_limit_of(j, r) * us_per_second;
}

fit fit_of(time_us remaining_us, const std::optional<int64_t>& limit, bool checkpoints, const deadline_rule& r) {
  fit f;
  f.time_limit_seconds = time_limit_of(limit, r);
  if (remaining_us >= f.time_limit_seconds * us_per_second) {
    f.admitted = true;
    f.rule = "fits";
  } else if (checkpoints && remaining_us >= r.min_useful_seconds * us_per_second) {
    f.admitted = true;
    f.rule = "checkpoint_min_useful";
  }
  return f;
}

fit fit_of(const worker& w, const job& j, const deadline_rule& r, time_us now) {
  if (w.allocation_ends_at == 0) return {true, "no_deadline", time_limit_of(j, r)};
  return fit_of(w.allocation_ends_at - now, j.time_limit_seconds, j.checkpoints, r);
}

int64_t remaining_seconds(const worker& w, time_us now) {
  time_us left = w.allocation_ends_at - now;
  return left >= 0 ? left / us_per_second : -((-left + us_per_second - 1) / us_per_second);
}

}  // namespace baton::core
