#pragma once
// Per-minute counts for the dashboard's overview (GET /stats/minutes): in each minute, the
// job.assigned events recorded, and the queue depth (jobs queued, held and waiting on a
// dependency included: GET /summary's `queued`) at the minute's end and at its highest, with
// the jobs running at its end. Fed from the log from sequence 1 like every projection, so a
// tab opened now sees the last day at once, whatever it was not watching.
//
// A minute is a UTC minute of the events' recorded times, never of a clock: an event recorded
// before the latest minute seen (a clock stepped back) counts in that latest minute, so a
// minute already told is never rewritten. Kept: the `window` minutes ending at the latest
// event's minute (1440, a day, by default); older ones are folded into the levels they left.
// Minutes without a job event are not stored: a read carries the levels through them.
//
// Kept per job user as well, so a user reads their own jobs' counts and an admin everyone's
// (GET /summary's rule, core::may_see_user_of). Memory: one entry per job not yet ended (its
// id, user and status), and per kept minute one entry for each user whose jobs changed in it.
// An event it cannot read as recorded (a payload that is not CBOR) is counted as skipped
// (GET /healthz, /metrics) and applied as far as it can be; nothing stops it.
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/jobs/job.hpp"
#include "projections/projection.hpp"

namespace baton::projections {

struct minute_row {
  int64_t minute_us = 0;     // the minute's start (µs since the Unix epoch)
  uint64_t assignments = 0;  // job.assigned events recorded in it
  int64_t queued = 0;        // queued jobs at its end (the latest minute: now)
  int64_t queued_max = 0;    // the most queued at any moment in it
  int64_t running = 0;       // running jobs at its end
  bool operator==(const minute_row& o) const {
    return minute_us == o.minute_us && assignments == o.assignments && queued == o.queued && queued_max == o.queued_max &&
           running == o.running;
  }
};

struct minute_series {
  std::optional<int64_t> as_of_us;  // the latest event's recorded time (none: no event yet)
  uint64_t seq = 0;                 // the last event applied
  std::vector<minute_row> minutes;  // oldest first, one per minute, none missing
};

class minute_stats : public projection {
 public:
  static constexpr size_t default_window_minutes = 1440;
  explicit minute_stats(size_t window_minutes = default_window_minutes);

  size_t window_minutes() const { return window_; }
  // The minutes from the one holding since_us (0: the window's first) to the latest, of
  // `user`'s jobs, or of every job when user is nullopt (an admin's read).
  minute_series read(const std::optional<std::string>& user, int64_t since_us) const;

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override;

 private:
  struct level {
    int64_t queued = 0, running = 0;
  };
  struct counts {
    uint64_t assignments = 0;
    int64_t queued = 0, queued_max = 0, running = 0;
  };
  struct minute {
    int64_t at = 0;  // minutes since the epoch
    counts all;
    std::map<std::string, counts> users;  // the users whose jobs changed in this minute
  };
  struct live_job {
    std::string user;
    core::job_status status = core::job_status::queued;
  };

  void apply_one(const events::event_envelope& e);
  // Counts one change of user's jobs in minute m: `change` updates the levels, then the
  // minute's entries take them.
  template <class F>
  void count(int64_t m, const std::string& user, F&& change);
  void move_level(level& l, std::optional<core::job_status> from, std::optional<core::job_status> to);
  void evict();

  const size_t window_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, live_job> jobs_;  // jobs not yet ended, looked up by id, never iterated
  level all_;
  std::map<std::string, level> users_;  // now (users with nothing queued or running left out)
  // The levels at the end of the minute before the first kept one.
  level base_all_;
  std::map<std::string, level> base_users_;
  std::deque<minute> minutes_;
  std::optional<int64_t> first_minute_, last_minute_;
  int64_t last_us_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace baton::projections
