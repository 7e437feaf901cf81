#pragma once
#include <string>

namespace baton::daemon {

// The shared API token when BATON_API_TOKEN is not set: read from <data_dir>/api_token, or
// made (32 random bytes, hex) and written there with mode 0600 on first start, so batond
// runs with no configuration and is still never open to anyone who can reach the port.
std::string load_or_create_api_token(const std::string& data_dir);

}  // namespace baton::daemon
