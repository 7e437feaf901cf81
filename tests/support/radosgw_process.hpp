#pragma once
// A real S3 store for a test: Ceph's radosgw on a one-node in-memory cluster, started by
// tests/support/radosgw.sh in a fresh directory, on loopback ports of support/free_ports.hpp,
// with one bucket. It checks signatures, expiry and each URL's key and method as a store in
// production does. Its owner's key pair is owner_key_id/owner_secret; with `upload_key` a subuser
// that may only write (no read, so no server-side copy from another key) is made too, as
// docs/storage.md asks of storage.s3.upload_access_key_id.
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/free_ports.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_until.hpp"

namespace baton::test {

class radosgw_process {
 public:
  static constexpr const char* owner_key_id = "BATONTESTOWNER";
  static constexpr const char* owner_secret = "baton-test-owner-secret-0123456789abcdef";
  static constexpr const char* upload_key_id = "BATONTESTUPLOAD";
  static constexpr const char* upload_secret = "baton-test-upload-secret-0123456789abcde";

  explicit radosgw_process(const std::string& bucket, bool upload_key = false) {
    for (const char* tool : {"/usr/bin/radosgw", "/usr/bin/ceph-mon", "/usr/bin/ceph-osd"})
      if (!std::filesystem::exists(tool))
        throw std::runtime_error(std::string("no ") + tool + " (scripts/setup.sh installs radosgw, ceph-mon and ceph-osd)");
    // A port taken between the choice and the daemon's bind fails the start: choose again.
    std::string why;
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (start(bucket, upload_key, attempt, why)) return;
    }
    throw std::runtime_error("radosgw did not start: " + why);
  }
  ~radosgw_process() { stop(); }
  radosgw_process(const radosgw_process&) = delete;
  radosgw_process& operator=(const radosgw_process&) = delete;

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return proc_ ? proc_->out() + proc_->err() : std::string(); }

 private:
  bool start(const std::string& bucket, bool upload_key, int attempt, std::string& why) {
    const auto ports = free_ports(2);
    if (ports.size() < 2) {
      why = "no free loopback ports";
      return false;
    }
    port_ = ports[1];
    const std::string dir = dir_ / ("rgw" + std::to_string(attempt));
    std::vector<std::string> env = {"MON_PORT=" + std::to_string(ports[0]), "RGW_PORT=" + std::to_string(ports[1]),
                                    std::string("RGW_ACCESS_KEY=") + owner_key_id, std::string("RGW_SECRET_KEY=") + owner_secret,
                                    "RGW_BUCKET=" + bucket};
    if (upload_key) {
      env.push_back(std::string("RGW_UPLOAD_ACCESS_KEY=") + upload_key_id);
      env.push_back(std::string("RGW_UPLOAD_SECRET_KEY=") + upload_secret);
    }
    // --pdeathsig: a test killed outright (a ctest timeout) still stops the script, which stops
    // the daemons; none outlives the test.
    proc_ = std::make_unique<child_process>(
        std::vector<std::string>{"/usr/bin/setpriv", "--pdeathsig", "TERM", "--", "/bin/bash", BATON_RADOSGW_SCRIPT, dir},
        dir_ / ("radosgw" + std::to_string(attempt)), env);
    bool exited = false;
    const bool up = wait_until(
        [&] {
          if (proc_->out().find("RGW_READY") != std::string::npos) return true;
          exited = proc_->wait(std::chrono::milliseconds(0)) != -1;
          return exited;
        },
        std::chrono::seconds(120));
    if (up && !exited) return true;
    why = (exited ? "the script exited: " : "not ready within 120 s: ") + proc_->out() + proc_->err();
    stop();
    return false;
  }
  void stop() {
    if (!proc_) return;
    proc_->signal(SIGTERM);
    if (proc_->wait(std::chrono::seconds(30)) == -1) proc_->signal(SIGKILL);
    proc_.reset();
  }

  temp_dir dir_;
  std::unique_ptr<child_process> proc_;
  int port_ = 0;
};

}  // namespace baton::test
