#pragma once
// A real PostgreSQL server of the tests' own, in a temporary directory: initdb with a
// password (scram-sha-256) for the role "baton", listening only on a Unix socket in that
// directory (no port to collide with), stopped and removed at the end. As root, the server
// runs as the "postgres" system user that Debian's package creates (PostgreSQL refuses root).
// Locale C: text sorts by bytes, as in SQLite, so both views dump in the same order.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "support/temp_dir.hpp"

namespace baton::test {

class postgres_server {
 public:
  static constexpr const char* password = "pg-test-secret-'quoted'\\";  // quotes and a backslash: conninfo escaping

  postgres_server() {
    bin_ = find_bin();
    dir_ = dir_root_.path() + "/pg";
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/pwfile") << password << "\n";
    if (geteuid() == 0) {
      run_as_ = "runuser -u postgres -- ";
      std::filesystem::permissions(dir_root_.path(), std::filesystem::perms::owner_all | std::filesystem::perms::group_exec |
                                                         std::filesystem::perms::others_exec);
      sh("chown -R postgres " + dir_);
    }
    sh(run_as_ + bin_ + "/initdb -D " + dir_ + "/data -U baton --pwfile=" + dir_ +
       "/pwfile --auth=scram-sha-256 -E UTF8 --locale=C > " + dir_ + "/initdb.log 2>&1");
    start();
  }
  ~postgres_server() { stop(); }
  postgres_server(const postgres_server&) = delete;
  postgres_server& operator=(const postgres_server&) = delete;

  // pg_ctl -w: returns once the server accepts connections (or fails).
  void start() {
    sh(run_as_ + bin_ + "/pg_ctl -D " + dir_ + "/data -w -t 60 -l " + dir_ + "/server.log -o \"-c listen_addresses='' -k " +
       dir_ + " -c fsync=off\" start > /dev/null");
    running_ = true;
  }
  // Immediate: as a crash would (no checkpoint); the next start recovers.
  void stop() {
    if (!running_) return;
    running_ = false;
    std::system((run_as_ + bin_ + "/pg_ctl -D " + dir_ + "/data -w -m immediate stop > /dev/null 2>&1").c_str());
  }

  // The server's main process (its backends are its children), from the data dir's lock file; 0 when stopped.
  pid_t postmaster() const {
    std::ifstream in(dir_ + "/data/postmaster.pid");
    long pid = 0;
    return in >> pid ? static_cast<pid_t>(pid) : 0;
  }

  // The connection string batond is configured with (the password comes from the environment).
  std::string dsn() const { return "host=" + dir_ + " dbname=postgres user=baton"; }
  // The same with the password, for the test's own queries.
  std::string dsn_with_password() const;

 private:
  static std::string find_bin() {
    std::string best;
    for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql"))
      if (std::filesystem::exists(e.path() / "bin/initdb") && e.path().string() > best) best = e.path().string();
    if (best.empty()) throw std::runtime_error("no PostgreSQL server under /usr/lib/postgresql (scripts/setup.sh installs it)");
    return best + "/bin";
  }
  static void sh(const std::string& cmd) {
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }

  temp_dir dir_root_;
  std::string dir_, bin_, run_as_;
  bool running_ = false;
};

inline std::string postgres_server::dsn_with_password() const {
  std::string quoted = "'";
  for (char c : std::string(password)) {
    if (c == '\\' || c == '\'') quoted += '\\';
    quoted += c;
  }
  return dsn() + " password=" + quoted + "'";
}

}  // namespace baton::test
