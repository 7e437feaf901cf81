#include "batond/pilot_token_files.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <system_error>

#include "batond/api_token.hpp"
#include "core/access/access.hpp"
#include "http/caller.hpp"

namespace baton::daemon {

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

pilot_token_files::pilot_token_files(const std::string& data_dir)
    : token_path_(data_dir + "/pilot_token"), next_path_(data_dir + "/pilot_token.next") {}

void pilot_token_files::settle(const core::rotating_secret& recorded) const {
  const std::string staged = first_line(next_path_);
  if (staged.empty()) return;
  if (!recorded.sha256.empty() && core::constant_time_equal(http::hash_of(staged), recorded.sha256)) {
    spdlog::warn("the pilot token's last rotation was recorded but not put in place before the stop: done now");
    commit();
  } else {
    spdlog::info("a pilot token rotation that was never recorded is dropped ({})", next_path_);
    discard();
  }
}

void pilot_token_files::stage(const std::string& secret) const { write_secret_file(next_path_, secret); }

void pilot_token_files::commit() const {
  const std::string secret = first_line(next_path_);
  try {
    if (secret.empty()) throw std::runtime_error("cannot read " + next_path_);
    if (std::rename(next_path_.c_str(), token_path_.c_str()) != 0)
      throw std::runtime_error("cannot rename " + next_path_ + " to " + token_path_);
  } catch (const std::exception& e) {
    spdlog::error("the rotated pilot token is recorded but not in place ({}); batond's next start puts it there", e.what());
  }
}

void pilot_token_files::discard() const { std::remove(next_path_.c_str()); }

}  // namespace baton::daemon
