#pragma once
// A job's input bundle: a directory on a shared filesystem (or a file:// URL of one), or a .tar /
// .tar.gz / .tgz file there, holding baton-job.json at its top, which names the command, the
// checkpoint globs and the progress file.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/supervision.hpp"

namespace baton::worker {

inline const char* job_spec_file = "baton-job.json";
inline const char* checkpoint_subdir = ".baton-checkpoints";  // inside the bundle dir, never copied
inline const char* failures_subdir = ".baton-failures";       // likewise: failure artifacts

// The bundle itself is unacceptable (unsafe archive member, unreadable archive, over a cap): the job fails
// with reason invalid_bundle and this message as the detail.
struct invalid_bundle : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct job_spec {
  std::string command;                        // run with /bin/sh -c
  std::vector<std::string> checkpoint_globs;  // relative to the working dir
  std::string progress_file;                  // relative; empty = no progress reporting
  std::vector<std::string> output_globs;      // stored-bundle jobs: uploaded as the job's outputs on exit 0
  supervision_rules supervision;              // "supervision": when an attempt ends by itself
};

// "file:///x/y" -> "/x/y", "/x/y" -> "/x/y"; nullopt for other schemes or relative paths.
std::optional<std::string> resolve_bundle_dir(const std::string& input_bundle_path);

// Parses baton-job.json text. Throws std::runtime_error naming the problem.
job_spec parse_job_spec(const std::string& text);

// True for a relative path that stays inside its root (no "..", not absolute, not empty).
bool is_safe_relative(const std::string& rel);

// True for a path ending in .tar, .tar.gz or .tgz.
bool is_tar_path(const std::string& path);

// Copies the bundle dir into dst (created), skipping the checkpoint and failure subdirs and symlinks
// that point outside. Throws std::filesystem::filesystem_error / runtime_error.
void copy_bundle(const std::string& bundle_dir, const std::string& dst);

}  // namespace baton::worker
