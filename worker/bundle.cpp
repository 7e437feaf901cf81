#include "worker/bundle.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>

namespace baton::worker {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<std::string> resolve_bundle_dir(const std::string& p) {
  std::string path = p;
  const std::string scheme = "file://";
  if (path.rfind(scheme, 0) == 0) {
    path = path.substr(scheme.size());
    if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
  } else if (path.find("://") != std::string::npos) {
    return std::nullopt;
  }
  if (path.empty() || path[0] != '/') return std::nullopt;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

bool is_safe_relative(const std::string& rel) {
  if (rel.empty() || rel[0] == '/') return false;
  for (const auto& part : fs::path(rel))
    if (part == "..") return false;
  return true;
}

job_spec parse_job_spec(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error(std::string(job_spec_file) + " is not a JSON object");
  job_spec s;
  auto cmd = j.find("command");
  if (cmd == j.end() || !cmd->is_string() || cmd->get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos)
    throw std::runtime_error(std::string(job_spec_file) + ": 'command' must be a non-empty string");
  s.command = cmd->get<std::string>();
  auto globs = [&](const char* key, std::vector<std::string>& out) {
    auto g = j.find(key);
    if (g == j.end() || g->is_null()) return;
    if (!g->is_array()) throw std::runtime_error(std::string(job_spec_file) + ": '" + key + "' must be a list");
    for (const auto& p : *g) {
      if (!p.is_string() || !is_safe_relative(p.get<std::string>()))
        throw std::runtime_error(std::string(job_spec_file) + ": '" + key + "' must hold relative paths without '..'");
      out.push_back(p.get<std::string>());
    }
  };
  globs("checkpoint_globs", s.checkpoint_globs);
  globs("output_globs", s.output_globs);
  if (auto pf = j.find("progress_file"); pf != j.end() && !pf->is_null()) {
    if (!pf->is_string() || !is_safe_relative(pf->get<std::string>()))
      throw std::runtime_error(std::string(job_spec_file) + ": 'progress_file' must be a relative path without '..'");
    s.progress_file = pf->get<std::string>();
  }
  if (auto sv = j.find("supervision"); sv != j.end()) s.supervision = parse_supervision(*sv);
  return s;
}

bool is_tar_path(const std::string& path) {
  auto ends = [&](const std::string& suffix) {
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".tar") || ends(".tar.gz") || ends(".tgz");
}

void copy_bundle(const std::string& bundle_dir, const std::string& dst) {
  fs::path src(bundle_dir);
  if (!fs::is_directory(src)) throw std::runtime_error("bundle " + bundle_dir + " is not a directory");
  fs::create_directories(dst);
  for (auto it = fs::recursive_directory_iterator(src); it != fs::recursive_directory_iterator(); ++it) {
    auto rel = fs::relative(it->path(), src);
    if (it.depth() == 0 && (rel == checkpoint_subdir || rel == failures_subdir)) {
      it.disable_recursion_pending();
      continue;
    }
    auto target = fs::path(dst) / rel;
    auto st = it->symlink_status();
    if (fs::is_symlink(st)) {
      // Keep links relative to the bundle working; copy a link's target content otherwise.
      auto resolved = fs::weakly_canonical(it->path());
      if (fs::is_regular_file(resolved)) fs::copy_file(resolved, target, fs::copy_options::overwrite_existing);
      continue;
    }
    if (fs::is_directory(st))
      fs::create_directories(target);
    else if (fs::is_regular_file(st))
      fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing);
  }
}

}  // namespace baton::worker
