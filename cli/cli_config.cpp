#include "cli/cli_config.hpp"

#include <yaml-cpp/yaml.h>

#include "config/yaml_read.hpp"

namespace baton::cli {

using namespace config::detail;

namespace {

// The keys batond and the CLI share (config::endpoint), read by their one reader.
void apply_file(const YAML::Node& root, cli_config& c) {
  if (!root || root.IsNull()) return;  // empty file or only comments
  if (!root.IsMap()) throw key_error{"(top level)", "expected a map, got " + describe(root)};
  check_unique_keys(root, "");
  config::endpoint served{c.listen, {}, c.data_dir};
  read_endpoint(root, served);
  c.listen = served.listen;
  c.data_dir = served.data_dir;
  c.https = served.tls.enabled();
}

void apply_env(const config::env_lookup& env, cli_config& c) {
  if (auto v = config::env_value(env, "BATON_API_TOKEN")) c.api_token = *v;
  config::endpoint served{c.listen, {}, c.data_dir};
  read_endpoint_env(env, served);
  c.listen = served.listen;
  c.data_dir = served.data_dir;
}

}  // namespace

cli_config_result cli_config_from_string(const std::string& yaml_text, const std::string& path, const config::env_lookup& env) {
  return load_layers<cli_config_result>(cli_config{}, yaml_text, path, apply_file, [&](cli_config& c) { apply_env(env, c); });
}

cli_config_result load_cli_config(const config::config_choice& which, const config::env_lookup& env) {
  auto t = config::read_config(which);
  if (t.error) return {std::nullopt, t.error};
  auto r = cli_config_from_string(t.text, t.source, env);
  if (r.value) r.value->warnings = t.warnings;
  return r;
}

}  // namespace baton::cli
