#include "slurm/squeue.hpp"

#include <sstream>

namespace baton::slurm {

std::map<std::string, job_state> parse_squeue(const std::string& out) {
  std::map<std::string, job_state> jobs;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    auto p1 = line.find('|');
    std::string id = line.substr(0, p1);
    job_state s{"UNKNOWN", ""};
    if (p1 != std::string::npos) {
      auto p2 = line.find('|', p1 + 1);
      s.state = line.substr(p1 + 1, p2 == std::string::npos ? std::string::npos : p2 - p1 - 1);
      if (p2 != std::string::npos) s.reason = line.substr(p2 + 1);
      if (s.reason == "(null)" || s.reason == "None") s.reason.clear();
    }
    jobs[id] = s;
  }
  return jobs;
}

std::vector<std::string> squeue_args(const std::vector<std::string>& ids) {
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
  return {"--jobs", list, "--noheader", "--format=%i|%T|%r"};
}

std::optional<std::map<std::string, job_state>> alive_from(const std::vector<std::string>& ids, const util::run_result& r) {
  if (r.timed_out || r.not_started) return std::nullopt;
  if (r.exit_code == 0) return parse_squeue(r.out);
  // One id that Slurm no longer knows: squeue exits 1 instead of printing nothing.
  if (ids.size() == 1 && r.exit_code == 1 && r.err.find("Invalid job id") != std::string::npos)
    return std::map<std::string, job_state>{};
  return std::nullopt;
}

}  // namespace baton::slurm
