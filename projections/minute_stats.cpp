#include "projections/minute_stats.hpp"

#include <algorithm>
#include <string_view>

#include "core/jobs/job_events.hpp"
#include "core/events/event_types.hpp"

namespace baton::projections {

namespace {

constexpr int64_t minute_us = 60'000'000;
constexpr std::string_view job_prefix = "job/";

int64_t minute_of(int64_t us) { return us >= 0 ? us / minute_us : -((-us + minute_us - 1) / minute_us); }

bool counted(core::job_status s) { return s == core::job_status::queued || s == core::job_status::running; }

}  // namespace

minute_stats::minute_stats(size_t window_minutes) : projection("minute_stats"), window_(std::max<size_t>(1, window_minutes)) {}

void minute_stats::apply(const std::vector<events::event_envelope>& batch) {
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& e : batch) apply_one(e);
}

void minute_stats::move_level(level& l, std::optional<core::job_status> from, std::optional<core::job_status> to) {
  auto add = [&](std::optional<core::job_status> s, int64_t by) {
    if (s == core::job_status::queued) l.queued += by;
    if (s == core::job_status::running) l.running += by;
  };
  add(from, -1);
  add(to, +1);
}

template <class F>
void minute_stats::count(int64_t m, const std::string& user, F&& change) {
  // The minute's entries start from the levels before the change (its queued_max too).
  auto start = [](const level& l) { return counts{0, l.queued, l.queued, l.running}; };
  if (minutes_.empty() || minutes_.back().at != m) minutes_.push_back({m, start(all_), {}});
  minute& b = minutes_.back();
  auto u = users_.find(user);
  auto [c, fresh] = b.users.try_emplace(user);
  if (fresh) c->second = start(u == users_.end() ? level{} : u->second);
  level& mine = u == users_.end() ? users_[user] : u->second;
  change(all_, b.all);
  change(mine, c->second);
  for (auto [l, into] : {std::pair<const level*, counts*>{&all_, &b.all}, {&mine, &c->second}}) {
    into->queued = l->queued;
    into->queued_max = std::max(into->queued_max, l->queued);
    into->running = l->running;
  }
  if (mine.queued == 0 && mine.running == 0) users_.erase(user);
}

void minute_stats::evict() {
  const int64_t first_kept = *last_minute_ - static_cast<int64_t>(window_) + 1;
  while (!minutes_.empty() && minutes_.front().at < first_kept) {
    const minute& old = minutes_.front();
    base_all_ = {old.all.queued, old.all.running};
    for (const auto& [user, c] : old.users) {
      if (c.queued == 0 && c.running == 0)
        base_users_.erase(user);
      else
        base_users_[user] = {c.queued, c.running};
    }
    minutes_.pop_front();
  }
}

void minute_stats::apply_one(const events::event_envelope& e) {
  seq_ = e.seq;
  last_us_ = std::max(last_us_, e.recorded_at_us);
  int64_t m = minute_of(e.recorded_at_us);
  if (last_minute_ && m < *last_minute_) m = *last_minute_;  // a clock stepped back: the latest minute
  if (!first_minute_) first_minute_ = m;
  if (!last_minute_ || m > *last_minute_) {
    last_minute_ = m;
    evict();
  }
  if (e.stream_id.compare(0, job_prefix.size(), job_prefix) != 0) return;
  const std::string id = e.stream_id.substr(job_prefix.size());
  const core::job_event kind = core::job_event_of(e.type);
  if (kind == core::job_event::other) return;

  // Only two events' payloads matter here: whose a new job is, and how a preemption ends it.
  std::string user, mode;
  if (kind == core::job_event::created || kind == core::job_event::preempted) {
    try {
      const auto p = core::ev::decode(e.type, e.schema_version, e.payload);
      if (const auto* c = std::get_if<core::ev::job_created>(&p)) user = c->user;
      if (const auto* pre = std::get_if<core::ev::job_preempted>(&p)) mode = pre->mode.empty() ? "requeue" : pre->mode;
    } catch (const std::exception& ex) {
      skip(e.seq, kind == core::job_event::created
                      ? std::string("its user cannot be read (") + ex.what() + "): the job is counted, for admins only"
                      : std::string("its mode cannot be read (") + ex.what() + "): taken as a preemption that requeues");
    }
  }
  const std::optional<core::job_status> to = core::status_set_by(kind, mode);

  std::optional<core::job_status> from;
  auto it = jobs_.find(id);
  if (kind == core::job_event::created) {
    if (it != jobs_.end()) from = it->second.status;  // (a job is created once; a repeat counts once)
    it = jobs_.insert_or_assign(id, live_job{user, core::job_status::queued}).first;
  } else if (it == jobs_.end()) {
    // An event of an ended job (pruned, requeued as a clone) changes no count; an assignment of a
    // job never created here cannot happen in a whole log, and is counted for admins only.
    if (kind != core::job_event::assigned) return;
    skip(e.seq, "job.assigned of a job this projection never saw created: counted for admins only");
    count(m, "", [](level&, counts& c) { ++c.assignments; });
    return;
  } else {
    from = it->second.status;
  }
  const bool moves = to && (from != to) && ((from && counted(*from)) || counted(*to));
  if (moves || kind == core::job_event::assigned) {
    count(m, it->second.user, [&](level& l, counts& c) {
      if (moves) move_level(l, from, to);
      if (kind == core::job_event::assigned) ++c.assignments;
    });
  }
  if (to) it->second.status = *to;
  if (to && core::is_terminal(*to)) jobs_.erase(it);
}

minute_series minute_stats::read(const std::optional<std::string>& user, int64_t since_us) const {
  std::lock_guard<std::mutex> g(mu_);
  minute_series out;
  out.seq = seq_;
  if (!last_minute_) return out;
  out.as_of_us = last_us_;
  const int64_t window_first = *last_minute_ - static_cast<int64_t>(window_) + 1;
  const int64_t from = std::max({*first_minute_, window_first, since_us ? minute_of(since_us) : window_first});
  // The levels carried through minutes nobody's jobs changed in: from before the window, then
  // each kept minute's end.
  level carry = base_all_;
  if (user) {
    auto b = base_users_.find(*user);
    carry = b == base_users_.end() ? level{} : b->second;
  }
  const counts* entry = nullptr;
  auto entry_of = [&](const minute& b) -> const counts* {
    if (!user) return &b.all;
    auto c = b.users.find(*user);
    return c == b.users.end() ? nullptr : &c->second;
  };
  auto it = minutes_.begin();
  for (; it != minutes_.end() && it->at < from; ++it)
    if ((entry = entry_of(*it))) carry = {entry->queued, entry->running};
  if (from > *last_minute_) return out;
  out.minutes.reserve(static_cast<size_t>(*last_minute_ - from + 1));
  for (int64_t m = from; m <= *last_minute_; ++m) {
    minute_row row{m * minute_us, 0, carry.queued, carry.queued, carry.running};
    if (it != minutes_.end() && it->at == m) {
      if ((entry = entry_of(*it))) {
        row = {m * minute_us, entry->assignments, entry->queued, entry->queued_max, entry->running};
        carry = {entry->queued, entry->running};
      }
      ++it;
    }
    out.minutes.push_back(row);
  }
  return out;
}

}  // namespace baton::projections
