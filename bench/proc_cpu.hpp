#pragma once
// The CPU time a process (or one of its threads) has used, from /proc: a figure per request or
// per GiB that does not depend on how fast the clients sharing the machine happened to be.
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace baton::bench {

// The fields of a /proc stat file after the command name, from the state (field 3) on; empty
// if the process is gone.
inline std::istringstream stat_fields(const std::string& stat) {
  std::ifstream in(stat);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  return std::istringstream(close == std::string::npos ? std::string() : text.substr(close + 2));
}

// User and system time apart, in µs. (`stat` is /proc/<pid>/stat, or a thread's
// /proc/<pid>/task/<tid>/stat.)
struct cpu_time {
  double user_us = 0, system_us = 0;
  double total() const { return user_us + system_us; }
};
inline cpu_time cpu_time_of(const std::string& stat) {
  auto fields = stat_fields(stat);
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // state .. cmajflt: fields 3..13
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  const double tick_us = 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
  return {utime * tick_us, stime * tick_us};
}
inline double cpu_us_of(const std::string& stat) { return cpu_time_of(stat).total(); }
inline double cpu_us(pid_t pid) { return cpu_us_of("/proc/" + std::to_string(pid) + "/stat"); }

}  // namespace baton::bench
