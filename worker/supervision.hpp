#pragma once
// Payload supervision, asked for in baton-job.json's "supervision" object. An attempt ends
// with its own reason when the payload
//   runs longer than max_run_seconds                               -> payload_max_run_time
//   shows no sign of life for no_progress_seconds: its log did not
//   grow and its progress file did not change                      -> payload_stalled
//   writes a log line matching one of fatal_log_patterns           -> payload_fatal_log
// (ECMAScript regular expressions, searched in each line: "CUDA error", "NaN detected").
// Time is an input: the job loop calls check(now) about once a second; tests drive it.
#include <chrono>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace baton::worker {

struct supervision_rules {
  double max_run_seconds = 0;      // 0: no limit
  double no_progress_seconds = 0;  // 0: no limit
  std::vector<std::string> fatal_log_patterns;
  bool any() const { return max_run_seconds > 0 || no_progress_seconds > 0 || !fatal_log_patterns.empty(); }
};

// The "supervision" object of baton-job.json. Throws std::runtime_error naming the field
// (a number that is not positive, a pattern that is not a valid regular expression).
supervision_rules parse_supervision(const nlohmann::json& j);

struct supervision_verdict {
  std::string reason;  // payload_max_run_time, payload_stalled, payload_fatal_log
  std::string detail;  // what was seen, for the job's failure detail
};

class payload_watch {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  // log_path: the payload's log (it may not exist yet); progress_path: "" for none.
  payload_watch(const supervision_rules& rules, std::string log_path, std::string progress_path, time_point started);

  // Why the attempt must end now, if it must. Reads what the log gained since the last call.
  std::optional<supervision_verdict> check(time_point now);

 private:
  std::optional<supervision_verdict> scan_new_log(bool& grew);
  bool progress_changed();

  supervision_rules rules_;
  std::vector<std::regex> patterns_;
  std::string log_path_, progress_path_;
  uint64_t log_offset_ = 0;
  std::string partial_;        // the log's last, unfinished line
  std::string last_progress_;  // the progress file's content at the last change
  time_point started_, last_sign_of_life_;
};

}  // namespace baton::worker
