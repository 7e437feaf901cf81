#pragma once
#include <string>

#include "slurm/secret_file.hpp"

namespace baton::daemon {

// The shared API token when BATON_API_TOKEN is not set: read from <data_dir>/api_token, or
// made (32 random bytes, hex) and written there with mode 0600 on first start, so batond
// runs with no configuration and is still never open to anyone who can reach the port.
std::string load_or_create_api_token(const std::string& data_dir);

// The pilot token when BATON_PILOT_TOKEN is not set: <data_dir>/pilot_token, made the same
// way. It only registers workers, so it is what pilots get instead of the operator token.
std::string load_or_create_pilot_token(const std::string& data_dir);

// A token's file: mode 0600 from its first byte, written aside and renamed (slurm/secret_file.hpp).
using slurm::write_secret_file;

}  // namespace baton::daemon
