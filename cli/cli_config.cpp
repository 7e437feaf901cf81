#include "cli/cli_config.hpp"

#include <yaml-cpp/yaml.h>

#include "config/yaml_read.hpp"

namespace baton::cli {

using namespace config::detail;

namespace {

// The keys as batond reads them (config/config.cpp), with the same checks and messages.
void apply_file(const YAML::Node& root, cli_config& c) {
  if (!root || root.IsNull()) return;  // empty file or only comments
  if (!root.IsMap()) throw key_error{"(top level)", "expected a map, got " + describe(root)};
  check_unique_keys(root, "");
  if (auto l = root["listen"]) {
    check_known_keys(l, "listen", {"host", "port"});
    read_string(l, "listen", "host", c.listen.host);
    read_int(l, "listen", "port", 0, 65535, c.listen.port);
  }
  read_string(root, "", "data_dir", c.data_dir);
  if (auto t = root["tls"]) {
    check_known_keys(t, "tls", {"cert_file", "key_file"});
    std::string cert, key;
    read_string(t, "tls", "cert_file", cert);
    read_string(t, "tls", "key_file", key);
    if (cert.empty() != key.empty())
      throw key_error{cert.empty() ? "tls.cert_file" : "tls.key_file", "HTTPS needs both tls.cert_file and tls.key_file; only one is set"};
    c.https = !cert.empty();
  }
}

void apply_env(const config::env_lookup& env, cli_config& c) {
  auto get = [&](const char* name) -> std::optional<std::string> {
    auto v = env(name);
    if (v && v->empty()) return std::nullopt;  // set but empty counts as unset
    return v;
  };
  if (auto v = get("BATON_API_TOKEN")) c.api_token = *v;
  if (auto v = get("BATON_DATA_DIR")) c.data_dir = *v;
  if (auto v = get("BATON_LISTEN")) {
    auto l = config::parse_listen(*v);
    if (!l) throw key_error{"BATON_LISTEN", "expected HOST:PORT with PORT in 0..65535, got '" + *v + "'"};
    c.listen = *l;
  }
}

}  // namespace

cli_config_result cli_config_from_string(const std::string& yaml_text, const std::string& path, const config::env_lookup& env) {
  cli_config c;
  try {
    apply_file(YAML::Load(yaml_text), c);
  } catch (const key_error& e) {
    return {std::nullopt, config::config_error{path, e.key, e.message}};
  } catch (const YAML::Exception& e) {
    return {std::nullopt, config::config_error{path, "", std::string("invalid YAML: ") + e.what()}};
  }
  try {
    apply_env(env, c);
  } catch (const key_error& e) {
    return {std::nullopt, config::config_error{"", e.key, e.message}};
  }
  return {c, std::nullopt};
}

cli_config_result load_cli_config(const config::config_choice& which, const config::env_lookup& env) {
  auto t = config::read_config(which);
  if (t.error) return {std::nullopt, t.error};
  auto r = cli_config_from_string(t.text, t.source, env);
  if (r.value) r.value->warnings = t.warnings;
  return r;
}

}  // namespace baton::cli
