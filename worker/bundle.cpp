#include "worker/bundle.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

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
  if (auto g = j.find("checkpoint_globs"); g != j.end() && !g->is_null()) {
    if (!g->is_array()) throw std::runtime_error(std::string(job_spec_file) + ": 'checkpoint_globs' must be a list");
    for (const auto& p : *g) {
      if (!p.is_string() || !is_safe_relative(p.get<std::string>()))
        throw std::runtime_error(std::string(job_spec_file) + ": checkpoint globs must be relative paths without '..'");
      s.checkpoint_globs.push_back(p.get<std::string>());
    }
  }
  if (auto pf = j.find("progress_file"); pf != j.end() && !pf->is_null()) {
    if (!pf->is_string() || !is_safe_relative(pf->get<std::string>()))
      throw std::runtime_error(std::string(job_spec_file) + ": 'progress_file' must be a relative path without '..'");
    s.progress_file = pf->get<std::string>();
  }
  return s;
}

bool is_tar_path(const std::string& path) {
  auto ends = [&](const std::string& suffix) {
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".tar") || ends(".tar.gz") || ends(".tgz");
}

std::string check_tar_listing(const std::vector<std::string>& verbose, const std::vector<std::string>& names) {
  if (verbose.size() != names.size())
    return "archive listings disagree (" + std::to_string(verbose.size()) + " vs " + std::to_string(names.size()) +
           " members)";
  if (names.empty()) return "archive is empty";
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& name = names[i];
    const auto& line = verbose[i];
    char type = line.empty() ? '?' : line[0];
    std::string member = "archive member '" + name + "'";
    if (type == 'l') {
      auto arrow = line.rfind(" -> ");
      return member + " is a symlink" + (arrow == std::string::npos ? "" : " (" + line.substr(arrow + 1) + ")") +
             "; links are not allowed";
    }
    if (type == 'h') return member + " is a hardlink; links are not allowed";
    if (type == 'c' || type == 'b') return member + " is a device file";
    if (type == 'p') return member + " is a fifo";
    if (type != '-' && type != 'd') return member + " has an unsupported type '" + std::string(1, type) + "'";
    if (name.empty() || name[0] == '/') return member + " has an absolute path";
    if (name == "." || name == "./") continue;
    if (!is_safe_relative(name)) return member + " has a '..' component";
  }
  return "";
}

namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string read_all(const std::string& path, size_t cap = 2000) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto text = ss.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.size() > cap ? text.substr(0, cap) + "..." : text;
}

}  // namespace

int run_program(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "LC_ALL=", 7) != 0 && std::strncmp(*e, "BATON_API_TOKEN=", 16) != 0) env_store.emplace_back(*e);
  env_store.emplace_back("LC_ALL=C");
  std::vector<char*> envp, args;
  for (auto& kv : env_store) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = argv;
  for (auto& a : argv_store) args.push_back(a.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  // The worker blocks SIGTERM/SIGINT (for sigwait) and ignores SIGPIPE: give the child defaults.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed for " + argv[0] + ": " + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

void unpack_tar_bundle(const std::string& tar_path, const std::string& dst, const std::string& scratch) {
  std::string archive = scratch + ".archive", listing_v = scratch + ".list-v", listing = scratch + ".list",
              err = scratch + ".err";
  struct cleanup {
    std::vector<std::string> paths;
    ~cleanup() {
      std::error_code ec;
      for (const auto& p : paths) fs::remove(p, ec);
    }
  } tidy{{archive, listing_v, listing, err}};
  if (!fs::is_regular_file(tar_path)) throw std::runtime_error("bundle archive " + tar_path + " is not a regular file");
  fs::create_directories(fs::path(scratch).parent_path());
  // A private copy: the shared file cannot be swapped between the check and the extraction.
  fs::copy_file(tar_path, archive, fs::copy_options::overwrite_existing);
  const std::string quoting = "--quoting-style=escape";
  if (int rc = run_program({"tar", "--force-local", quoting, "-tvf", archive}, listing_v, err); rc != 0)
    throw invalid_bundle("cannot list archive " + tar_path + " (tar exit " + std::to_string(rc) + "): " + read_all(err));
  if (int rc = run_program({"tar", "--force-local", quoting, "-tf", archive}, listing, err); rc != 0)
    throw invalid_bundle("cannot list archive " + tar_path + " (tar exit " + std::to_string(rc) + "): " + read_all(err));
  auto problem = check_tar_listing(read_lines(listing_v), read_lines(listing));
  if (!problem.empty()) throw invalid_bundle(problem + " (in " + tar_path + ")");
  fs::create_directories(dst);
  if (int rc = run_program({"tar", "--force-local", "--no-same-owner", "--no-same-permissions", "--no-overwrite-dir",
                            "-xf", archive, "-C", dst},
                           listing, err);
      rc != 0)
    throw invalid_bundle("cannot extract archive " + tar_path + " (tar exit " + std::to_string(rc) + "): " + read_all(err));
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
