#include "worker/slurm_deadline.hpp"

#include <spdlog/spdlog.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>

#include "slurm/subprocess.hpp"

namespace baton::worker {

namespace {

std::string trimmed(const std::string& s) {
  auto start = s.find_first_not_of(" \t\r\n"), end = s.find_last_not_of(" \t\r\n");
  return start == std::string::npos ? "" : s.substr(start, end - start + 1);
}

bool two_digits(const std::string& s, size_t at, int lo, int hi, int& out) {
  if (!std::isdigit(static_cast<unsigned char>(s[at])) || !std::isdigit(static_cast<unsigned char>(s[at + 1]))) return false;
  out = (s[at] - '0') * 10 + (s[at + 1] - '0');
  return out >= lo && out <= hi;
}

}  // namespace

slurm_end_time parse_slurm_end_time(const std::string& raw) {
  auto text = trimmed(raw);
  if (text == "Unknown" || text == "NONE" || text == "N/A") return {slurm_end_time::none, 0};
  // YYYY-MM-DDTHH:MM:SS, exactly.
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' || text[16] != ':')
    return {};
  int y_hi = 0, y_lo = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!two_digits(text, 0, 0, 99, y_hi) || !two_digits(text, 2, 0, 99, y_lo) || !two_digits(text, 5, 1, 12, mo) ||
      !two_digits(text, 8, 1, 31, d) || !two_digits(text, 11, 0, 23, h) || !two_digits(text, 14, 0, 59, mi) ||
      !two_digits(text, 17, 0, 59, s))
    return {};
  std::tm tm{};
  tm.tm_year = y_hi * 100 + y_lo - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  tm.tm_isdst = -1;  // Slurm prints local time: let the zone rules say whether DST applies
  std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1) || tm.tm_mday != d || tm.tm_mon != mo - 1) return {};  // e.g. 02-30
  return {slurm_end_time::time, static_cast<int64_t>(t)};
}

int64_t ask_slurm_for_allocation_end(const std::string& slurm_job_id) {
  auto r = slurm::run({"squeue", "-h", "-j", slurm_job_id, "-o", "%e"}, "", std::chrono::seconds(15));
  if (r.not_started || r.timed_out || r.exit_code != 0) {
    spdlog::warn("could not ask Slurm when allocation {} ends (squeue {}: {}); carrying on without a deadline",
                 slurm_job_id, r.not_started ? "did not start" : r.timed_out ? "timed out" : "exit " + std::to_string(r.exit_code),
                 trimmed(r.err));
    return 0;
  }
  auto end = parse_slurm_end_time(r.out);
  if (end.kind == slurm_end_time::none) {
    spdlog::info("Slurm knows no end for allocation {} ('{}'); no deadline", slurm_job_id, trimmed(r.out));
    return 0;
  }
  if (end.kind == slurm_end_time::malformed) {
    spdlog::warn("squeue's end time for allocation {} is unreadable ('{}'); carrying on without a deadline", slurm_job_id,
                 trimmed(r.out));
    return 0;
  }
  spdlog::info("asked Slurm: allocation {} ends at {} local time (epoch {})", slurm_job_id, trimmed(r.out),
               end.epoch_seconds);
  return end.epoch_seconds;
}

std::string rfc3339_utc(int64_t epoch_seconds) {
  std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double epoch_seconds_of(const std::string& text) {
  std::tm tm{};
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return 0;
  double fraction = 0;
  if (*rest == '.') {
    char* end = nullptr;
    fraction = std::strtod(rest, &end);
    rest = end;
  }
  if (std::string(rest) != "Z") return 0;
  return static_cast<double>(timegm(&tm)) + fraction;
}

}  // namespace baton::worker
