#pragma once
// The one way baton starts a helper program (sbatch, squeue, scancel, ssh, nvidia-smi): runs it
// with stdin text, collects stdout and stderr, and kills it (its whole process group) when the
// timeout passes. Blocking: call it from a detached actor, never from a scheduled one.
#include <chrono>
#include <string>
#include <vector>

namespace baton::slurm {

struct run_result {
  int exit_code = -1;      // the program's exit status; 128+N when killed by signal N
  bool timed_out = false;  // killed by us
  bool not_started = false;  // exec failed (program not found, ...): see err
  std::string out, err;
};

// The child gets batond's environment minus its secrets (BATON_API_TOKEN, BATON_PILOT_TOKEN,
// BATON_SALAD_API_KEY).
run_result run(const std::vector<std::string>& argv, const std::string& stdin_text, std::chrono::milliseconds timeout);

}  // namespace baton::slurm
