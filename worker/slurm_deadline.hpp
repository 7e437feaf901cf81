#pragma once
// When the Slurm allocation this worker runs in ends, asked of Slurm itself when nobody told
// the worker (no --allocation-deadline): `squeue -h -j $SLURM_JOB_ID -o %e`.
#include <cstdint>
#include <string>

namespace baton::worker {

struct slurm_end_time {
  enum kind_t { time, none, malformed } kind = malformed;
  int64_t epoch_seconds = 0;  // set when kind == time
};

// squeue's %e: the node's local time as YYYY-MM-DDTHH:MM:SS, or "Unknown", "NONE", "N/A"
// (no end: none). Surrounding whitespace is ignored; anything else is malformed.
slurm_end_time parse_slurm_end_time(const std::string& text);

// Runs squeue for the allocation and logs what it learned. Epoch seconds, or 0 (none known,
// squeue missing, failing or answering nonsense: the worker carries on without a deadline).
int64_t ask_slurm_for_allocation_end(const std::string& slurm_job_id);

}  // namespace baton::worker
