#pragma once
// A real batond child process on an ephemeral loopback port, with its own data dir,
// config file and API token, plus an HTTP client for it.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace baton::test {

inline const char* test_token = "test-token-0123456789abcdef";

class batond_process {
 public:
  // config_yaml is written to <dir>/batond.yaml; data lives in <dir>/data.
  // first_args: more command-line arguments for the first start.
  batond_process(const temp_dir& dir, const std::string& config_yaml, std::vector<std::string> extra_env = {},
                 const std::vector<std::string>& first_args = {})
      : dir_(dir), config_(dir / "batond.yaml") {
    std::ofstream(config_) << config_yaml;
    env_ = {"BATON_CONFIG=" + config_, "BATON_API_TOKEN=" + std::string(test_token),
            "BATON_DATA_DIR=", "BATON_LISTEN=", "BATON_LOG_LEVEL=warn"};
    env_.insert(env_.end(), extra_env.begin(), extra_env.end());
    start(first_args);
  }

  // extra_args: more command-line arguments for this start (e.g. --rebuild-projection views);
  // port: where to listen (0: an ephemeral port; a restart may ask for the one it had).
  void start(const std::vector<std::string>& extra_args = {}, int port = 0) {
    std::string port_file = dir_ / "port";
    std::filesystem::remove(port_file);
    std::vector<std::string> args{BATOND_PATH,   "--data-dir", dir_ / "data", "--listen", "127.0.0.1:" + std::to_string(port),
                                  "--port-file", port_file};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    proc_ = std::make_unique<child_process>(args, dir_ / ("batond-" + std::to_string(++starts_)), env_);
    // Until it serves or ends. A start recovers the log and catches the views up first: on a
    // log of thousands of events in the ASan build on a busy machine that took over 10 s.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (!std::filesystem::exists(port_file) && std::chrono::steady_clock::now() < deadline)
      if (proc_->wait(std::chrono::milliseconds(10)) != -1) break;
    auto text = slurp(port_file);
    port_ = text.empty() ? 0 : std::stoi(text);
  }

  int stop() {
    proc_->signal(SIGTERM);
    return exit_code(proc_->wait());
  }
  // Its exit code once it ends by itself (-1: still running at the deadline).
  int wait_exit(std::chrono::milliseconds deadline) { return exit_code(proc_->wait(deadline)); }
  void kill() {
    proc_->signal(SIGKILL);
    proc_->wait();
  }

  int port() const { return port_; }
  pid_t pid() const { return proc_->pid(); }
  std::string err() const { return proc_->err(); }
  // A fresh client (httplib clients are not thread-safe) carrying the shared token.
  std::unique_ptr<httplib::Client> client(const std::string& token = test_token) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(30, 0);
    c->set_tcp_nodelay(true);
    if (!token.empty()) c->set_default_headers({{"X-API-Token", token}});
    return c;
  }

 private:
  const temp_dir& dir_;
  std::string config_;
  std::vector<std::string> env_;
  std::unique_ptr<child_process> proc_;
  int port_ = 0;
  int starts_ = 0;
};

// batond run as a maintenance tool (--dump, --truncate-after, ...) on the data dir and config a
// batond_process in the same dir uses, to its end.
inline tool_result batond_tool(const temp_dir& dir, const std::vector<std::string>& args,
                               const std::vector<std::string>& extra_env = {}) {
  static int n = 0;
  std::vector<std::string> argv{BATOND_PATH, "--data-dir", dir / "data"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env{"BATON_CONFIG=" + dir / "batond.yaml", "BATON_DATA_DIR="};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  child_process p(argv, dir / ("batond-tool-" + std::to_string(++n)), env);
  int code = exit_code(p.wait());
  return {code, p.out(), p.err()};
}

}  // namespace baton::test
