#pragma once
// s3rver (a Node.js S3 server, installed by scripts/setup.sh) on a port of its own choosing on
// 127.0.0.1 with a fresh data dir and one bucket; the port is read from the line it prints
// once it listens. Its key pair is S3RVER / S3RVER.
#include <chrono>
#include <filesystem>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/wait_until.hpp"

namespace baton::test {

class s3rver_process {
 public:
  explicit s3rver_process(const std::string& bucket) {
    const std::string js = std::string(BATON_S3RVER_DIR) + "/node_modules/s3rver/bin/s3rver.js";
    if (!std::filesystem::exists(js))
      throw std::runtime_error("s3rver is not installed at " + js + " (scripts/setup.sh installs s3rver@3.7.1 there)");
    if (!std::filesystem::exists("/usr/bin/node"))
      throw std::runtime_error("no /usr/bin/node (scripts/setup.sh installs nodejs)");
    std::filesystem::create_directories(dir_ / "data");
    proc_ = std::make_unique<child_process>(std::vector<std::string>{"/usr/bin/node", js, "-d", dir_ / "data", "-a", "127.0.0.1",
                                                                     "-p", "0", "--configure-bucket", bucket},
                                            dir_ / "s3rver");
    const std::regex listening("S3rver listening on 127\\.0\\.0\\.1:([0-9]+)");
    std::smatch m;
    bool up = wait_until(
        [&] {
          std::string out = proc_->out();
          if (!std::regex_search(out, m, listening)) return false;
          port_ = std::stoi(m[1]);
          return true;
        },
        std::chrono::seconds(30));
    if (!up) throw std::runtime_error("s3rver did not say it was listening within 30 s: " + proc_->out() + proc_->err());
  }
  ~s3rver_process() {
    proc_->signal(SIGTERM);
    proc_->wait(std::chrono::seconds(10));
  }
  int port() const { return port_; }
  // Where s3rver keeps an object's bytes (a test damages one there).
  std::string object_file(const std::string& bucket, const std::string& key) const {
    return dir_ / ("data/" + bucket + "/" + key + "._S3rver_object");
  }
  std::string log() const { return proc_->out() + proc_->err(); }

 private:
  temp_dir dir_;
  std::unique_ptr<child_process> proc_;
  int port_ = 0;
};

}  // namespace baton::test
