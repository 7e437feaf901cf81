// baton jobs wait: waits until no job is queued, assigned, running, in handoff or cancelling
// (a campaign has ended), following the live stream rather than asking every few seconds; a
// progress bar on a terminal; the end's tally on stdout. Exit 0 once nothing is active, 4 when
// --timeout passed first.
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "cli/commands.hpp"
#include "cli/event_follower.hpp"
#include "cli/progress_bar.hpp"
#include "cli/request_helpers.hpp"

namespace baton::cli {

namespace {

using nlohmann::json;

const std::vector<std::string> active_statuses{"queued", "assigned", "running", "handoff", "cancelling"};
const std::vector<std::string> ended_statuses{"completed", "failed", "cancelled"};

// How many of the caller's jobs are in any of these statuses (X-Total-Count of a one-row page).
int count(context& c, const std::vector<std::string>& statuses, int64_t& n) {
  std::string path = "/jobs?limit=1";
  for (const auto& s : statuses) path += "&status=" + s;
  result r;
  if (int code = run(c, "GET", path, r)) return code;
  n = r.total;
  return ok;
}

}  // namespace

int jobs_wait(context& c, double timeout_seconds) {
  std::map<std::string, int64_t> ended_before;  // counted first: a job ending from here on is one of the tally's
  for (const auto& s : ended_statuses)
    if (int code = count(c, {s}, ended_before[s])) return code;
  event_follower live(c.daemon);
  const bool following = live.wait_live(std::chrono::seconds(5));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                               std::chrono::duration<double>(timeout_seconds));
  progress_bar bar(c.err, "jobs ended", "jobs", isatty(2) && !c.json);
  uint64_t seen = live.events();
  for (;;) {
    int64_t active = 0, ended = 0, ended_at_start = 0;
    if (int code = count(c, active_statuses, active)) return code;
    if (int code = count(c, ended_statuses, ended)) return code;
    for (const auto& [s, n] : ended_before) ended_at_start += n;
    const int64_t done = std::max<int64_t>(0, ended - ended_at_start);
    bar.update(static_cast<uint64_t>(done), static_cast<uint64_t>(done + active));
    if (active == 0) break;
    auto now = std::chrono::steady_clock::now();
    if (timeout_seconds > 0 && now >= deadline) {
      bar.finish();
      c.err << "baton: " << active << " jobs still active after " << timeout_seconds << " s\n";
      return wait_timeout;
    }
    auto wait = timeout_seconds > 0 ? std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::minutes(1))
                                    : std::chrono::steady_clock::duration(std::chrono::minutes(1));
    if (following && !live.ended()) {
      seen = live.wait_beyond(seen, std::chrono::duration_cast<std::chrono::milliseconds>(wait));
    } else {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(wait, std::chrono::seconds(2)));
    }
  }
  bar.finish();
  json tally = json::object();
  for (const auto& s : ended_statuses) {
    int64_t n = 0;
    if (int code = count(c, {s}, n)) return code;
    tally[s] = n - ended_before[s];
  }
  if (c.json) {
    c.out << json{{"ended", tally}}.dump() << "\n";
  } else {
    c.out << "no job active; ended while waiting:";
    for (const auto& s : ended_statuses) c.out << " " << s << " " << tally[s].get<int64_t>();
    c.out << "\n";
  }
  return ok;
}

}  // namespace baton::cli
