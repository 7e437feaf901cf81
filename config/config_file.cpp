#include "config/config_file.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace baton::config {

env_lookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::optional<std::string> env_value(const env_lookup& env, const std::string& name) {
  auto v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

std::string config_error::what() const {
  std::string where = file.empty() ? "config error in the environment" : "config error in " + file;
  return key.empty() ? where + ": " + message : where + ": key '" + key + "': " + message;
}

std::string config_path(const env_lookup& env) {
  if (auto p = env_value(env, "BATON_CONFIG")) return *p;
  return env_value(env, "HOME").value_or(".") + "/.config/baton/config.yaml";
}

std::optional<listen_config> parse_listen(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  auto port_text = text.substr(colon + 1);
  if (port_text.find_first_not_of("0123456789") != std::string::npos || port_text.size() > 5) return std::nullopt;
  int port = std::stoi(port_text);
  if (port > 65535) return std::nullopt;
  return listen_config{text.substr(0, colon), port};
}

config_choice choose_config(const std::string& flag, const env_lookup& env) {
  if (!flag.empty()) return {flag, "--config"};
  if (auto p = env_value(env, "BATON_CONFIG")) return {*p, "BATON_CONFIG"};
  return {config_path(env), ""};
}

config_text read_config(const config_choice& which) {
  config_text r;
  std::error_code ec;
  if (!std::filesystem::exists(which.path, ec)) {
    if (!which.named_by.empty())
      r.error = config_error{which.path, "",
                             "no such file (named by " + which.named_by +
                                 "); only the default path may be absent: name an existing file, or use "
                                 "/dev/null for built-in defaults"};
    else
      r.warnings.push_back("config file " + which.path + " not found; using built-in defaults");
    return r;
  }
  if (std::filesystem::is_directory(which.path, ec)) {
    r.error = config_error{which.path, "", "is a directory, not a YAML file"};
    return r;
  }
  std::ifstream in(which.path);
  if (!in) {
    r.error = config_error{which.path, "", "cannot be read"};
    return r;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  r.text = ss.str();
  r.source = which.path;
  return r;
}

}  // namespace baton::config
