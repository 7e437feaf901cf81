#pragma once
// A secret in a file of its own: mode 0600 from its first byte, written aside, fsynced and
// renamed over the old file, so a reader never sees half of it. batond's own tokens in its
// data dir and a pilot's one-time credential (slurm::submit) are both written this way.
#include <string>

namespace baton::slurm {

// Writes secret and a newline to path; throws naming the path if it cannot.
void write_secret_file(const std::string& path, const std::string& secret);

}  // namespace baton::slurm
