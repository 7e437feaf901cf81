#pragma once
#include <string>

namespace baton::daemon {

// The shared API token when BATON_API_TOKEN is not set: read from <data_dir>/api_token, or
// made (32 random bytes, hex) and written there with mode 0600 on first start, so batond
// runs with no configuration and is still never open to anyone who can reach the port.
std::string load_or_create_api_token(const std::string& data_dir);

// The pilot token when BATON_PILOT_TOKEN is not set: <data_dir>/pilot_token, made the same
// way. It only registers workers, so it is what pilots get instead of the operator token.
std::string load_or_create_pilot_token(const std::string& data_dir);

// Writes token to path with mode 0600 from its first byte (created under a temporary name,
// then renamed over the old file); throws naming the path if it cannot. The pilots' batch
// script names this file rather than carrying the token (a script sits in Slurm's spool and
// is shown by `scontrol write batch_script` to the cluster's admins).
void write_secret_file(const std::string& path, const std::string& token);

}  // namespace baton::daemon
