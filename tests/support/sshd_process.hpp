#pragma once
// A real OpenSSH server on 127.0.0.1 (a port of support/free_ports.hpp) that accepts one generated key for
// root, for testing submission over ssh. Needs root (sshd checks the privilege-separation
// directory and switches users).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "support/free_ports.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace baton::test {

class sshd_process {
 public:
  // extra_config: more sshd_config lines (e.g. "SetEnv SLURM_CONF=...").
  explicit sshd_process(const temp_dir& dir, const std::string& extra_config = "") : dir_(dir) {
    std::filesystem::create_directories("/run/sshd");
    std::system(("ssh-keygen -q -t ed25519 -N '' -f " + dir / "host_key" + " && ssh-keygen -q -t ed25519 -N '' -f " +
                 dir / "client_key" + " && cp " + dir / "client_key.pub" + " " + dir / "authorized_keys")
                    .c_str());
    port_ = free_port();
    std::ofstream(dir / "sshd_config") << "Port " << port_ << "\nListenAddress 127.0.0.1\nHostKey " << dir / "host_key"
                                       << "\nAuthorizedKeysFile " << dir / "authorized_keys"
                                       << "\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                                          "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
                                          "StrictModes no\nUsePAM no\nPidFile "
                                       << dir / "sshd.pid"
                                       << "\n"
                                       << extra_config;
    proc_ = std::make_unique<child_process>(std::vector<std::string>{"/usr/sbin/sshd", "-D", "-e", "-f", dir / "sshd_config"},
                                            dir / "sshd", std::vector<std::string>{});
    // Ready when a key login works.
    for (int i = 0; i < 100 && !ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ~sshd_process() {
    proc_->signal(SIGTERM);
    proc_->wait();
  }
  bool ready() const {
    return std::system(("ssh -q -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i " +
                        dir_ / "client_key" + " -p " + std::to_string(port_) + " root@127.0.0.1 true 2>/dev/null")
                           .c_str()) == 0;
  }
  int port() const { return port_; }
  std::string key() const { return dir_ / "client_key"; }
  std::string log() const { return proc_->err(); }

 private:
  const temp_dir& dir_;
  int port_ = 0;
  std::unique_ptr<child_process> proc_;
};

}  // namespace baton::test
