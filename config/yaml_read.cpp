#include "config/yaml_read.hpp"

namespace baton::config::detail {

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    default: return "'" + n.Scalar() + "'";
  }
}

std::string join(const std::string& prefix, const std::string& key) { return prefix.empty() ? key : prefix + "." + key; }

void check_known_keys(const YAML::Node& map, const std::string& prefix, const std::set<std::string>& allowed) {
  if (!map.IsMap()) throw key_error{prefix.empty() ? "(top level)" : prefix, "expected a map, got " + describe(map)};
  for (const auto& kv : map) {
    auto key = kv.first.as<std::string>();
    if (key == "api_token" && prefix.empty())
      throw key_error{"api_token", "secrets are not read from the file; set the environment variable BATON_API_TOKEN"};
    if (!allowed.count(key)) throw key_error{join(prefix, key), "unknown key"};
  }
}

void read_int(const YAML::Node& map, const std::string& prefix, const std::string& key, int lo, int hi, int& out) {
  auto n = map[key];
  if (!n) return;
  std::string what = "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + describe(n);
  if (!n.IsScalar()) throw key_error{join(prefix, key), what};
  long long v = 0;
  try {
    size_t used = 0;
    v = std::stoll(n.Scalar(), &used);
    if (used != n.Scalar().size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw key_error{join(prefix, key), what};
  }
  if (v < lo || v > hi) throw key_error{join(prefix, key), what};
  out = static_cast<int>(v);
}

void read_double(const YAML::Node& map, const std::string& prefix, const std::string& key, double lo, double hi,
                 double& out) {
  auto n = map[key];
  if (!n) return;
  std::string what = "expected a number in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + describe(n);
  if (!n.IsScalar()) throw key_error{join(prefix, key), what};
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(n.Scalar(), &used);
    if (used != n.Scalar().size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw key_error{join(prefix, key), what};
  }
  if (!(v >= lo && v <= hi)) throw key_error{join(prefix, key), what};
  out = v;
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

void read_string_list(const YAML::Node& map, const std::string& prefix, const std::string& key,
                      std::vector<std::string>& out) {
  auto n = map[key];
  if (!n) return;
  if (!n.IsSequence()) throw key_error{join(prefix, key), "expected a list of strings, got " + describe(n)};
  out.clear();
  for (const auto& item : n) {
    if (!item.IsScalar()) throw key_error{join(prefix, key), "expected a list of strings, got an item that is " + describe(item)};
    out.push_back(item.Scalar());
  }
}

}  // namespace baton::config::detail
