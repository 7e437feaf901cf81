#pragma once
// Reading typed values out of YAML maps with errors that name the dotted key. Shared by the
// settings loader and the cluster list parser.
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/config_file.hpp"

namespace baton::config::detail {

// Thrown inside the loader only; load() turns it into a config_error.
struct key_error {
  std::string key, message;
};

std::string describe(const YAML::Node& n);
std::string join(const std::string& prefix, const std::string& key);
void check_known_keys(const YAML::Node& map, const std::string& prefix, const std::set<std::string>& allowed);
// Refuses a key the map gives twice, naming it and both lines: YAML parsers keep both, and a
// lookup sees only the first, so the second would be ignored without a word. check_known_keys
// calls it; maps of names (partitions, accounts, image keys) call it themselves.
void check_unique_keys(const YAML::Node& map, const std::string& prefix);
void read_int(const YAML::Node& map, const std::string& prefix, const std::string& key, int lo, int hi, int& out);
void read_double(const YAML::Node& map, const std::string& prefix, const std::string& key, double lo, double hi, double& out);
void read_bool(const YAML::Node& map, const std::string& prefix, const std::string& key, bool& out);
void read_string(const YAML::Node& map, const std::string& prefix, const std::string& key, std::string& out);
void read_string_list(const YAML::Node& map, const std::string& prefix, const std::string& key, std::vector<std::string>& out);

// The top level's listen:, tls: and data_dir: keys into `e` (keys absent leave it as it is).
void read_endpoint(const YAML::Node& root, endpoint& e);
// BATON_DATA_DIR and BATON_LISTEN over it (set but empty counts as unset).
void read_endpoint_env(const env_lookup& env, endpoint& e);

// v with the file's text (apply_file(root, v)), then the environment (apply_env(v)) over it:
// {v, nullopt}, or {nullopt, the first problem} naming the file (or "" for the environment).
template <class Result, class T, class ApplyFile, class ApplyEnv>
Result load_layers(T v, const std::string& yaml_text, const std::string& path, ApplyFile apply_file, ApplyEnv apply_env) {
  try {
    apply_file(YAML::Load(yaml_text), v);
  } catch (const key_error& e) {
    return {std::nullopt, config_error{path, e.key, e.message}};
  } catch (const YAML::Exception& e) {
    return {std::nullopt, config_error{path, "", std::string("invalid YAML: ") + e.what()}};
  }
  try {
    apply_env(v);
  } catch (const key_error& e) {
    return {std::nullopt, config_error{"", e.key, e.message}};
  }
  return {std::move(v), std::nullopt};
}

}  // namespace baton::config::detail
