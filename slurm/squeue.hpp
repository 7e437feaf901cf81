#pragma once
// What squeue says about a set of Slurm job ids, with its quirks (slurm-local.md §3):
// one unknown id exits 1 ("Invalid job id specified"), several unknown ids exit 0 with no
// output; finished jobs drop out of the default listing at once.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/util/process.hpp"

namespace baton::slurm {

struct job_state {
  std::string state;   // PENDING, RUNNING, COMPLETING, ... ("UNKNOWN" for a bare id line)
  std::string reason;  // "" for (null)/None
};

// Lines "id|STATE|reason" -> map; blank lines ignored.
std::map<std::string, job_state> parse_squeue(const std::string& out);

// The arguments after the program name: --jobs a,b --noheader --format=%i|%T|%r
std::vector<std::string> squeue_args(const std::vector<std::string>& ids);

// Interprets one squeue run for `ids`: the jobs still alive (pending, running, completing),
// or nullopt when the answer cannot be trusted (timeout, other errors): then nothing is reaped.
std::optional<std::map<std::string, job_state>> alive_from(const std::vector<std::string>& ids, const util::run_result& r);

}  // namespace baton::slurm
