#include "core/planning/capacity_profile.hpp"

#include <algorithm>

namespace baton::core {

namespace {

time_us add_saturated(time_us a, time_us b) {  // b >= 0
  return a > time_never - b ? time_never : a + b;
}

}  // namespace

capacity_profile::capacity_profile(time_us now, int64_t capacity, time_us available_from, time_us available_until,
                                   time_us resolution)
    : now_(now),
      from_(available_from),
      until_(available_until == 0 ? time_never : available_until),
      resolution_(resolution),
      capacity_(capacity) {
  time_us open = std::max(now_, from_);
  steps_.push_back({now_, open > now_ || until_ <= open ? 0 : capacity_});
  if (until_ <= open) return;
  // No two neighbours equal (a node of capacity 0 is one step), as occupy keeps them.
  if (open > now_ && capacity_ != 0) steps_.push_back({open, capacity_});
  if (until_ != time_never && steps_.back().free != 0) steps_.push_back({until_, 0});
}

time_us capacity_profile::occupied_end(time_us end) const {
  if (resolution_ <= 0 || end == time_never) return end;
  time_us rem = end % resolution_;
  if (rem < 0) rem += resolution_;
  time_us rounded = rem == 0 ? end : add_saturated(end, resolution_ - rem);
  if (rounded > until_ && end <= until_) return until_;  // past the window nothing is free anyway
  return rounded;
}

size_t capacity_profile::step_index(time_us t) const {
  if (steps_.size() < 2 || t < steps_[1].at) return 0;  // (most searches start at now)
  auto it = std::upper_bound(steps_.begin(), steps_.end(), t, [](time_us v, const step& s) { return v < s.at; });
  return it == steps_.begin() ? 0 : static_cast<size_t>(it - steps_.begin()) - 1;
}

size_t capacity_profile::split_at(time_us t) {
  size_t i = step_index(t);
  if (steps_[i].at == t) return i;
  steps_.insert(steps_.begin() + static_cast<std::ptrdiff_t>(i) + 1, step{t, steps_[i].free});
  return i + 1;
}

void capacity_profile::occupy(int64_t units, time_us start, time_us end) {
  start = std::max(start, now_);
  end = occupied_end(end);
  if (end <= start || units == 0) return;
  size_t a = split_at(start);
  size_t b = end == time_never ? steps_.size() : split_at(end);
  for (size_t i = a; i < b; ++i) steps_[i].free -= units;
  // Neighbours that became equal are one step: the profile stays as short as the plan allows.
  size_t lo = a == 0 ? 1 : a, hi = std::min(b, steps_.size() - 1);
  for (size_t i = hi; i >= lo && i > 0; --i)
    if (steps_[i].free == steps_[i - 1].free) steps_.erase(steps_.begin() + static_cast<std::ptrdiff_t>(i));
}

void capacity_profile::advance(time_us now) {
  if (now <= now_) return;
  size_t i = step_index(now);  // the step holding the new now becomes the first
  steps_.erase(steps_.begin(), steps_.begin() + static_cast<std::ptrdiff_t>(i));
  steps_.front().at = now;
  now_ = now;
}

bool capacity_profile::reserve(int64_t units, time_us start, time_us end) {
  if (start < now_) return false;
  time_us e = occupied_end(end);
  if (e <= start) return true;
  if (min_free(start, e) < units) return false;
  occupy(units, start, end);
  return true;
}

int64_t capacity_profile::free_at(time_us t) const { return t < now_ ? 0 : steps_[step_index(t)].free; }

int64_t capacity_profile::min_free(time_us start, time_us end) const {
  if (end <= start) return capacity_;
  int64_t m = start < now_ ? 0 : capacity_;
  start = std::max(start, now_);
  for (size_t i = step_index(start); i < steps_.size() && steps_[i].at < end; ++i) m = std::min(m, steps_[i].free);
  return m;
}

std::optional<time_slot> capacity_profile::earliest(const slot_request& r, time_us not_before, time_us not_after) const {
  if (r.units > capacity_) return std::nullopt;
  const time_us duration = std::max<time_us>(r.duration, 1);
  // The shortest stay that counts: the whole time limit, or for a checkpointing job min_useful.
  const time_us need = r.checkpoints ? std::clamp<time_us>(r.min_useful, 1, duration) : duration;
  time_us latest = not_after;
  if (until_ != time_never) latest = std::min(latest, until_ - need);
  time_us s = std::max(not_before, now_);
  const size_t n = steps_.size();
  size_t i = step_index(s);
  // Two pointers: a candidate start fails at the first short step inside its span; the next
  // candidate is the first step after it with enough free, so no step is looked at twice.
  while (s <= latest) {
    time_us e = add_saturated(s, duration);
    if (r.checkpoints && e > until_) e = until_;
    const time_us held = occupied_end(e);
    size_t j = i;
    while (j < n && steps_[j].at < held && steps_[j].free >= r.units) ++j;
    if (j == n || steps_[j].at >= held) return time_slot{s, e};
    // (No further than `latest`: a job that must start now is refused at its first short step.)
    size_t k = j + 1;
    while (k < n && steps_[k].free < r.units && steps_[k].at <= latest) ++k;
    if (k == n || steps_[k].at > latest) return std::nullopt;
    s = steps_[k].at;
    i = k;
  }
  return std::nullopt;
}

}  // namespace baton::core
