#include "config/yaml_read.hpp"

#include <map>
#include <type_traits>

namespace baton::config::detail {

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return "'" + n.Scalar() + "'";
  }
}

std::string join(const std::string& prefix, const std::string& key) { return prefix.empty() ? key : prefix + "." + key; }

void check_unique_keys(const YAML::Node& map, const std::string& prefix) {
  if (!map.IsMap()) return;
  std::map<std::string, int> first_line;  // (yaml-cpp counts lines from 0)
  for (const auto& kv : map) {
    auto key = kv.first.as<std::string>();
    const int line = kv.first.Mark().line + 1;
    auto [at, fresh] = first_line.emplace(key, line);
    if (!fresh)
      throw key_error{join(prefix, key), "given twice (lines " + std::to_string(at->second) + " and " + std::to_string(line) +
                                             "); only the first would count, so write it once"};
  }
}

void check_known_keys(const YAML::Node& map, const std::string& prefix, const std::set<std::string>& allowed) {
  if (!map.IsMap()) throw key_error{prefix.empty() ? "(top level)" : prefix, "expected a map, got " + describe(map)};
  check_unique_keys(map, prefix);
  for (const auto& kv : map) {
    auto key = kv.first.as<std::string>();
    if (key == "api_token" && prefix.empty())
      throw key_error{"api_token", "secrets are not read from the file; set the environment variable BATON_API_TOKEN"};
    if (!allowed.count(key)) throw key_error{join(prefix, key), "unknown key"};
  }
}

namespace {

// An integer (T int) or a number (T double) in lo..hi, the whole scalar; NaN is in no range.
template <class T>
void read_number(const YAML::Node& map, const std::string& prefix, const std::string& key, T lo, T hi, T& out) {
  constexpr bool integral = std::is_integral_v<T>;
  auto n = map[key];
  if (!n) return;
  std::string what = std::string(integral ? "expected an integer in " : "expected a number in ") + std::to_string(lo) + ".." +
                     std::to_string(hi) + ", got " + describe(n);
  if (!n.IsScalar()) throw key_error{join(prefix, key), what};
  std::conditional_t<integral, long long, double> v = 0;
  try {
    size_t used = 0;
    if constexpr (integral)
      v = std::stoll(n.Scalar(), &used);
    else
      v = std::stod(n.Scalar(), &used);
    if (used != n.Scalar().size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw key_error{join(prefix, key), what};
  }
  if (!(v >= lo && v <= hi)) throw key_error{join(prefix, key), what};
  out = static_cast<T>(v);
}

}  // namespace

void read_int(const YAML::Node& map, const std::string& prefix, const std::string& key, int lo, int hi, int& out) {
  read_number(map, prefix, key, lo, hi, out);
}

void read_double(const YAML::Node& map, const std::string& prefix, const std::string& key, double lo, double hi, double& out) {
  read_number(map, prefix, key, lo, hi, out);
}

void read_bool(const YAML::Node& map, const std::string& prefix, const std::string& key, bool& out) {
  auto n = map[key];
  if (!n) return;
  if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false")) {
    out = n.Scalar() == "true";
    return;
  }
  throw key_error{join(prefix, key), "expected true or false, got " + describe(n)};
}

void read_string(const YAML::Node& map, const std::string& prefix, const std::string& key, std::string& out) {
  auto n = map[key];
  if (!n) return;
  if (!n.IsScalar() || n.Scalar().empty()) throw key_error{join(prefix, key), "expected a non-empty string, got " + describe(n)};
  out = n.Scalar();
}

void read_string_list(const YAML::Node& map, const std::string& prefix, const std::string& key, std::vector<std::string>& out) {
  auto n = map[key];
  if (!n) return;
  if (!n.IsSequence()) throw key_error{join(prefix, key), "expected a list of strings, got " + describe(n)};
  out.clear();
  for (const auto& item : n) {
    if (!item.IsScalar()) throw key_error{join(prefix, key), "expected a list of strings, got an item that is " + describe(item)};
    out.push_back(item.Scalar());
  }
}

void read_endpoint(const YAML::Node& root, endpoint& e) {
  if (auto l = root["listen"]) {
    check_known_keys(l, "listen", {"host", "port"});
    read_string(l, "listen", "host", e.listen.host);
    read_int(l, "listen", "port", 0, 65535, e.listen.port);
  }
  read_string(root, "", "data_dir", e.data_dir);
  if (auto t = root["tls"]) {
    check_known_keys(t, "tls", {"cert_file", "key_file"});
    read_string(t, "tls", "cert_file", e.tls.cert_file);
    read_string(t, "tls", "key_file", e.tls.key_file);
    if (e.tls.cert_file.empty() != e.tls.key_file.empty())
      throw key_error{e.tls.cert_file.empty() ? "tls.cert_file" : "tls.key_file",
                      "HTTPS needs both tls.cert_file and tls.key_file; only one is set"};
  }
}

void read_endpoint_env(const env_lookup& env, endpoint& e) {
  if (auto v = env_value(env, "BATON_DATA_DIR")) e.data_dir = *v;
  if (auto v = env_value(env, "BATON_LISTEN")) {
    auto l = parse_listen(*v);
    if (!l) throw key_error{"BATON_LISTEN", "expected HOST:PORT with PORT in 0..65535, got '" + *v + "'"};
    e.listen = *l;
  }
}

}  // namespace baton::config::detail
