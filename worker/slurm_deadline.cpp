#include "worker/slurm_deadline.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>

#include "core/util/process.hpp"
#include "core/util/time.hpp"
#include "core/util/text.hpp"

namespace baton::worker {

slurm_end_time parse_slurm_end_time(const std::string& raw) {
  auto text = util::trimmed(raw);
  if (text == "Unknown" || text == "NONE" || text == "N/A") return {slurm_end_time::none, 0};
  // YYYY-MM-DDTHH:MM:SS, exactly: checked and read by the one RFC 3339 parser as if it were UTC,
  // which gives the fields as written; mktime then takes them as the node's local time.
  if (text.size() != 19 || text[10] != 'T') return {};
  const auto as_utc = util::parse_time_us(text + "Z");
  if (!as_utc) return {};
  std::time_t fields = static_cast<std::time_t>(*as_utc / 1'000'000);
  std::tm tm{};
  if (!gmtime_r(&fields, &tm)) return {};
  tm.tm_isdst = -1;  // Slurm prints local time: let the zone rules say whether DST applies
  std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return {};
  return {slurm_end_time::time, static_cast<int64_t>(t)};
}

int64_t ask_slurm_for_allocation_end(const std::string& slurm_job_id) {
  auto r = util::run({"squeue", "-h", "-j", slurm_job_id, "-o", "%e"}, "", std::chrono::seconds(15), util::secret_env_names());
  if (r.not_started || r.timed_out || r.exit_code != 0) {
    spdlog::warn("could not ask Slurm when allocation {} ends (squeue {}: {}); carrying on without a deadline", slurm_job_id,
                 r.not_started ? "did not start"
                 : r.timed_out ? "timed out"
                               : "exit " + std::to_string(r.exit_code),
                 util::trimmed(r.err));
    return 0;
  }
  auto end = parse_slurm_end_time(r.out);
  if (end.kind == slurm_end_time::none) {
    spdlog::info("Slurm knows no end for allocation {} ('{}'); no deadline", slurm_job_id, util::trimmed(r.out));
    return 0;
  }
  if (end.kind == slurm_end_time::malformed) {
    spdlog::warn("squeue's end time for allocation {} is unreadable ('{}'); carrying on without a deadline", slurm_job_id,
                 util::trimmed(r.out));
    return 0;
  }
  spdlog::info("asked Slurm: allocation {} ends at {} local time (epoch {})", slurm_job_id, util::trimmed(r.out),
               end.epoch_seconds);
  return end.epoch_seconds;
}

}  // namespace baton::worker
