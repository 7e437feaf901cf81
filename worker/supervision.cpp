#include "worker/supervision.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <sys/stat.h>

namespace baton::worker {

namespace {

constexpr size_t max_read_per_check = size_t{4} << 20;  // a chatty payload is scanned over several checks
// Longer lines are matched on their first 4 KiB: libstdc++'s regex matcher recurses per input
// character for some patterns, so the line length bounds its stack use.
constexpr size_t max_line = size_t{4} << 10;
constexpr size_t max_progress_bytes = 4096;

std::string seconds(double s) { return std::to_string(static_cast<int64_t>(std::llround(s))) + " s"; }

double positive_seconds(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
    throw std::runtime_error(std::string("baton-job.json: 'supervision.") + key + "' must be a positive number of seconds");
  return it->get<double>();
}

}  // namespace

supervision_rules parse_supervision(const nlohmann::json& j) {
  supervision_rules r;
  if (j.is_null()) return r;
  if (!j.is_object()) throw std::runtime_error("baton-job.json: 'supervision' must be an object");
  for (const auto& [key, value] : j.items())
    if (key != "max_run_seconds" && key != "no_progress_seconds" && key != "fatal_log_patterns")
      throw std::runtime_error("baton-job.json: 'supervision." + key + "' is not a supervision rule");
  r.max_run_seconds = positive_seconds(j, "max_run_seconds");
  r.no_progress_seconds = positive_seconds(j, "no_progress_seconds");
  if (auto p = j.find("fatal_log_patterns"); p != j.end() && !p->is_null()) {
    if (!p->is_array()) throw std::runtime_error("baton-job.json: 'supervision.fatal_log_patterns' must be a list");
    for (const auto& pattern : *p) {
      if (!pattern.is_string() || pattern.get<std::string>().empty())
        throw std::runtime_error("baton-job.json: 'supervision.fatal_log_patterns' must hold non-empty strings");
      try {
        std::regex check(pattern.get<std::string>(), std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        throw std::runtime_error("baton-job.json: 'supervision.fatal_log_patterns': '" + pattern.get<std::string>() +
                                 "' is not a valid regular expression (" + e.what() + ")");
      }
      r.fatal_log_patterns.push_back(pattern.get<std::string>());
    }
  }
  return r;
}

payload_watch::payload_watch(const supervision_rules& rules, std::string log_path, std::string progress_path, time_point started)
    : rules_(rules),
      log_path_(std::move(log_path)),
      progress_path_(std::move(progress_path)),
      started_(started),
      last_sign_of_life_(started) {
  for (const auto& p : rules_.fatal_log_patterns) patterns_.emplace_back(p, std::regex::ECMAScript | std::regex::optimize);
  progress_changed();  // what the progress file holds at start (a resumed job's) is no sign of life
}

std::optional<supervision_verdict> payload_watch::check(time_point now) {
  const double ran = std::chrono::duration<double>(now - started_).count();
  if (rules_.max_run_seconds > 0 && ran >= rules_.max_run_seconds)
    return supervision_verdict{
        "payload_max_run_time",
        "the payload ran for " + seconds(ran) + ", past supervision.max_run_seconds = " + seconds(rules_.max_run_seconds)};
  bool grew = false;
  if (auto fatal = scan_new_log(grew)) return fatal;
  if (grew || progress_changed()) last_sign_of_life_ = now;
  const double quiet = std::chrono::duration<double>(now - last_sign_of_life_).count();
  if (rules_.no_progress_seconds > 0 && quiet >= rules_.no_progress_seconds)
    return supervision_verdict{"payload_stalled",
                               "no new line in the payload log and no change of its progress file for " + seconds(quiet) +
                                   " (supervision.no_progress_seconds = " + seconds(rules_.no_progress_seconds) + ")"};
  return std::nullopt;
}

std::optional<supervision_verdict> payload_watch::scan_new_log(bool& grew) {
  struct stat st {};
  if (::stat(log_path_.c_str(), &st) != 0) return std::nullopt;
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < log_offset_) {  // truncated by the payload: read it from its start again
    log_offset_ = 0;
    partial_.clear();
  }
  if (size == log_offset_) return std::nullopt;
  grew = true;
  std::ifstream in(log_path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(log_offset_));
  std::string chunk(static_cast<size_t>(std::min<uint64_t>(size - log_offset_, max_read_per_check)), '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  log_offset_ += chunk.size();
  if (patterns_.empty()) return std::nullopt;
  size_t from = 0;
  while (from < chunk.size()) {
    const size_t nl = chunk.find('\n', from);
    const size_t end = nl == std::string::npos ? chunk.size() : nl;
    if (partial_.size() < max_line) partial_.append(chunk, from, std::min(end - from, max_line - partial_.size()));
    if (nl == std::string::npos) break;  // unfinished: completed by a later check
    std::string line;
    line.swap(partial_);
    for (size_t i = 0; i < patterns_.size(); ++i)
      if (std::regex_search(line, patterns_[i]))
        return supervision_verdict{"payload_fatal_log", "the payload log matched the fatal pattern '" +
                                                            rules_.fatal_log_patterns[i] + "': " + line.substr(0, 2000)};
    from = nl + 1;
  }
  return std::nullopt;
}

bool payload_watch::progress_changed() {
  if (progress_path_.empty()) return false;
  std::ifstream in(progress_path_, std::ios::binary);
  if (!in) return false;
  std::string now(max_progress_bytes, '\0');
  in.read(now.data(), static_cast<std::streamsize>(now.size()));
  now.resize(static_cast<size_t>(in.gcount()));
  if (now == last_progress_) return false;
  last_progress_ = std::move(now);
  return true;
}

}  // namespace baton::worker
