#pragma once
// What the CLI reads of batond's config file (the same file: --config, $BATON_CONFIG, else
// ~/.config/baton/config.yaml): where batond listens, whether it serves HTTPS, and its data
// directory (for the api_token file batond writes there); then BATON_LISTEN, BATON_DATA_DIR
// and BATON_API_TOKEN over them, as batond takes them. Nothing of batond's scheduling,
// clusters or storage: a mistake there is batond's to report, not a reason for `baton` to stop.
#include <optional>
#include <string>
#include <vector>

#include "config/config_file.hpp"

namespace baton::cli {

struct cli_config {
  config::listen_config listen;
  bool https = false;  // tls.cert_file (and tls.key_file) set
  std::string data_dir = config::default_data_dir;
  std::string api_token;  // BATON_API_TOKEN; "" when unset
  std::vector<std::string> warnings;
};

struct cli_config_result {
  std::optional<cli_config> value;
  std::optional<config::config_error> error;  // naming the file and key, or the variable
};

cli_config_result load_cli_config(const config::config_choice& which, const config::env_lookup& env);
// The same from YAML text (tests).
cli_config_result cli_config_from_string(const std::string& yaml_text, const std::string& path, const config::env_lookup& env);

}  // namespace baton::cli
