#include "config/clusters_parse.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <optional>
#include <sstream>
#include <vector>

#include "config/yaml_read.hpp"
#include "slurm/sbatch_script.hpp"

namespace baton::config::detail {
namespace {

const std::set<std::string> cluster_keys = {"name",
                                            "extends",
                                            "is_template",
                                            "partition",
                                            "account",
                                            "qos",
                                            "gres",
                                            "memory",
                                            "memory_per_gpu",
                                            "wall_time",
                                            "log_directory",
                                            "nodes",
                                            "ntasks",
                                            "gpu_type",
                                            "gpu_count",
                                            "strategy",
                                            "jit_threshold_hours",
                                            "max_pending_jobs",
                                            "ssh_host",
                                            "ssh_user",
                                            "ssh_key_file",
                                            "ssh_port",
                                            "ssh_options",
                                            "submit_timeout_seconds",
                                            "query_timeout_seconds",
                                            "sigterm_margin_seconds",
                                            "handoff_margin_seconds",
                                            "worker_command",
                                            "worker_images",
                                            "template",
                                            "pilot_token_file",
                                            "pilot_credential_dir",
                                            "ca_file"};

// Values that end up in #SBATCH lines: Slurm reads them without a shell, so the only way to
// inject is a newline or a space-separated extra option; allow none of that.
bool directive_safe(const std::string& v) {
  for (unsigned char c : v)
    if (!(std::isalnum(c) || std::string("_.:,=+/@%-[]").find(static_cast<char>(c)) != std::string::npos)) return false;
  return true;
}

bool name_safe(const std::string& v) {
  if (v.empty()) return false;
  for (unsigned char c : v)
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

// One raw entry: its own keys only (inheritance comes later).
struct raw_entry {
  YAML::Node node;
  std::string prefix;  // clusters[i]
  std::string name, extends;
  bool is_template = false;
};

// A directory the compute nodes read: an absolute path when set.
void read_node_path(const YAML::Node& map, const std::string& prefix, const std::string& key, std::string& out) {
  read_string(map, prefix, key, out);
  if (!out.empty() && out.front() != '/')
    throw key_error{join(prefix, key), "must be an absolute path (the compute nodes read it), got '" + out + "'"};
}

void apply_entry(const YAML::Node& n, const std::string& p, cluster_config& c) {
  read_string(n, p, "partition", c.partition);
  read_string(n, p, "account", c.account);
  read_string(n, p, "qos", c.qos);
  read_string(n, p, "gres", c.gres);
  read_string(n, p, "memory", c.memory);
  read_string(n, p, "memory_per_gpu", c.memory_per_gpu);
  read_string(n, p, "wall_time", c.wall_time);
  read_string(n, p, "log_directory", c.log_directory);
  read_int(n, p, "nodes", 1, 100000, c.nodes);
  read_int(n, p, "ntasks", 1, 1000000, c.ntasks);
  read_string(n, p, "gpu_type", c.gpu_type);
  read_int(n, p, "gpu_count", 0, 64, c.gpu_count);
  read_string(n, p, "strategy", c.strategy);
  read_double(n, p, "jit_threshold_hours", 0.0001, 10000, c.jit_threshold_hours);
  read_int(n, p, "max_pending_jobs", 1, 3000, c.max_pending_jobs);  // Palmetto's Slurm: at most 3000 per user
  read_string(n, p, "ssh_host", c.ssh_host);
  read_string(n, p, "ssh_user", c.ssh_user);
  read_string(n, p, "ssh_key_file", c.ssh_key_file);
  read_int(n, p, "ssh_port", 1, 65535, c.ssh_port);
  read_string_list(n, p, "ssh_options", c.ssh_options);
  read_int(n, p, "submit_timeout_seconds", 1, 3600, c.submit_timeout_seconds);
  read_int(n, p, "query_timeout_seconds", 1, 3600, c.query_timeout_seconds);
  read_int(n, p, "sigterm_margin_seconds", 0, 86400, c.sigterm_margin_seconds);
  read_int(n, p, "handoff_margin_seconds", 0, 86400, c.handoff_margin_seconds);
  read_string(n, p, "worker_command", c.worker_command);
  read_string(n, p, "pilot_token_file", c.pilot_token_file);
  read_node_path(n, p, "pilot_credential_dir", c.pilot_credential_dir);
  read_string(n, p, "ca_file", c.ca_file);
  read_string(n, p, "template", c.template_path);
  if (auto imgs = n["worker_images"]) {
    auto ip = join(p, "worker_images");
    if (!imgs.IsMap()) throw key_error{ip, "expected a map of image key -> {sif_path | image_uri}, got " + describe(imgs)};
    check_unique_keys(imgs, ip);
    for (const auto& kv : imgs) {
      auto key = kv.first.as<std::string>();
      auto kp = join(ip, key);
      if (!name_safe(key)) throw key_error{kp, "an image key may hold letters, digits, '_', '-' and '.' only"};
      image_source src = c.worker_images[key];  // deep merge: the parent's entry, overridden
      if (kv.second && !kv.second.IsNull()) {
        check_known_keys(kv.second, kp, {"sif_path", "image_uri"});
        if (kv.second["sif_path"] || kv.second["image_uri"]) src = image_source{};
        read_string(kv.second, kp, "sif_path", src.sif_path);
        read_string(kv.second, kp, "image_uri", src.image_uri);
        if (!src.sif_path.empty() && !src.image_uri.empty()) throw key_error{kp, "give sif_path or image_uri, not both"};
        if (!src.image_uri.empty() && src.image_uri.find("://") == std::string::npos) src.image_uri = "docker://" + src.image_uri;
      }
      c.worker_images[key] = src;
    }
  }
}

// Slurm's --time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S. Empty when unreadable.
std::optional<long> slurm_duration_seconds(const std::string& t) {
  long days = 0;
  std::string rest = t;
  auto dash = t.find('-');
  std::vector<long> parts;
  auto number = [](const std::string& s) -> std::optional<long> {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stol(s);
  };
  if (dash != std::string::npos) {
    auto d = number(t.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    rest = t.substr(dash + 1);
  }
  size_t start = 0;
  while (true) {
    auto colon = rest.find(':', start);
    auto v = number(rest.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (!v) return std::nullopt;
    parts.push_back(*v);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return std::nullopt;
  long h = 0, m = 0, s = 0;
  if (dash != std::string::npos) {  // D-H, D-H:M, D-H:M:S
    h = parts[0];
    if (parts.size() > 1) m = parts[1];
    if (parts.size() > 2) s = parts[2];
  } else if (parts.size() == 1) {  // M
    m = parts[0];
  } else if (parts.size() == 2) {  // M:S
    m = parts[0];
    s = parts[1];
  } else {  // H:M:S
    h = parts[0];
    m = parts[1];
    s = parts[2];
  }
  long total = ((days * 24 + h) * 60 + m) * 60 + s;
  if (total <= 0) return std::nullopt;
  return total;
}

void validate(cluster_config& c, const std::string& p, const std::string& config_file) {
  if (c.partition.empty()) throw key_error{join(p, "partition"), "required: the Slurm partition to submit to"};
  if (c.worker_images.empty()) throw key_error{join(p, "worker_images"), "required: at least one image key"};
  const std::pair<const char*, const std::string*> directives[] = {{"partition", &c.partition},
                                                                   {"account", &c.account},
                                                                   {"qos", &c.qos},
                                                                   {"gres", &c.gres},
                                                                   {"memory", &c.memory},
                                                                   {"memory_per_gpu", &c.memory_per_gpu},
                                                                   {"wall_time", &c.wall_time},
                                                                   {"log_directory", &c.log_directory}};
  for (const auto& [key, value] : directives)
    if (!directive_safe(*value))
      throw key_error{join(p, key), "'" + *value + "' would go into an #SBATCH line: letters, digits and _.:,=+/@%-[] only"};
  if (!c.memory.empty() && !c.memory_per_gpu.empty())
    throw key_error{join(p, "memory_per_gpu"), "give memory or memory_per_gpu, not both"};
  if (c.strategy != "reactive" && c.strategy != "continuous" && c.strategy != "jit_threshold")
    throw key_error{join(p, "strategy"), "expected reactive, continuous or jit_threshold, got '" + c.strategy + "'"};
  bool unlimited = c.wall_time == "UNLIMITED" || c.wall_time == "INFINITE";
  auto wall = unlimited ? std::optional<long>{} : slurm_duration_seconds(c.wall_time);
  if (!wall && !unlimited)
    throw key_error{join(p, "wall_time"),
                    "'" + c.wall_time + "' is not a Slurm time (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED)"};
  c.wall_time_seconds = wall.value_or(0);
  if (c.handoff_margin_seconds < 0)
    c.handoff_margin_seconds = wall ? static_cast<int>(std::min<long>(600, *wall / 4)) : 600;
  else if (wall && c.handoff_margin_seconds >= *wall)
    throw key_error{join(p, "handoff_margin_seconds"), std::to_string(c.handoff_margin_seconds) + " s is not below wall_time (" +
                                                           std::to_string(*wall) +
                                                           " s): the worker would hand off before doing any work"};
  if (c.worker_command.find('\n') != std::string::npos) throw key_error{join(p, "worker_command"), "must be one line"};
  if (!c.template_path.empty()) {
    namespace fs = std::filesystem;
    fs::path t = c.template_path;
    if (t.is_relative() && !config_file.empty()) t = fs::path(config_file).parent_path() / t;
    std::ifstream in(t);
    if (!in) throw key_error{join(p, "template"), "cannot read " + t.string()};
    std::stringstream ss;
    ss << in.rdbuf();
    c.template_text = ss.str();
    auto err = slurm::template_error(c.template_text);
    if (!err.empty()) throw key_error{join(p, "template"), t.string() + ": " + err};
  }
}

}  // namespace

std::vector<cluster_config> parse_clusters(const YAML::Node& list, const std::string& config_file) {
  if (!list.IsSequence()) throw key_error{"clusters", "expected a list of cluster entries, got " + describe(list)};
  std::vector<raw_entry> raw;
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < list.size(); ++i) {
    raw_entry e;
    e.node = list[i];
    e.prefix = "clusters[" + std::to_string(i) + "]";
    check_known_keys(e.node, e.prefix, cluster_keys);
    read_string(e.node, e.prefix, "name", e.name);
    if (!name_safe(e.name)) throw key_error{join(e.prefix, "name"), "required: letters, digits, '_', '-' and '.' only"};
    read_string(e.node, e.prefix, "extends", e.extends);
    read_bool(e.node, e.prefix, "is_template", e.is_template);
    if (by_name.count(e.name)) throw key_error{join(e.prefix, "name"), "'" + e.name + "' is already used by another entry"};
    by_name[e.name] = i;
    raw.push_back(e);
  }
  std::vector<cluster_config> out;
  for (const auto& e : raw) {
    if (e.is_template) continue;
    // Ancestors first: root ... parent, then the entry itself.
    std::vector<const raw_entry*> chain{&e};
    std::set<std::string> seen{e.name};
    while (!chain.back()->extends.empty()) {
      const auto& parent = chain.back()->extends;
      auto it = by_name.find(parent);
      if (it == by_name.end())
        throw key_error{join(chain.back()->prefix, "extends"), "no cluster entry is named '" + parent + "'"};
      if (!seen.insert(parent).second) throw key_error{join(chain.back()->prefix, "extends"), "cycle through '" + parent + "'"};
      chain.push_back(&raw[it->second]);
    }
    cluster_config c;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) apply_entry((*it)->node, (*it)->prefix, c);
    c.name = e.name;
    validate(c, e.prefix, config_file);
    out.push_back(std::move(c));
  }
  return out;
}

provisioning_config parse_provisioning(const YAML::Node& n) {
  provisioning_config p;
  check_known_keys(
      n, "provisioning",
      {"interval_seconds", "daemon_url", "scripts_dir", "pilot_credential_dir", "slurm_calls_burst", "slurm_calls_per_second"});
  read_int(n, "provisioning", "interval_seconds", 1, 86400, p.interval_seconds);
  read_double(n, "provisioning", "slurm_calls_burst", 1, 1e6, p.slurm_calls_burst);
  read_double(n, "provisioning", "slurm_calls_per_second", 0.001, 1e6, p.slurm_calls_per_second);
  read_string(n, "provisioning", "daemon_url", p.daemon_url);
  read_string(n, "provisioning", "scripts_dir", p.scripts_dir);
  read_node_path(n, "provisioning", "pilot_credential_dir", p.pilot_credential_dir);
  return p;
}

salad_config parse_salad(const YAML::Node& n) {
  salad_config s;
  check_known_keys(n, "salad",
                   {"organization", "project", "container_group", "api_base_url", "worker_image_key", "max_replicas",
                    "interval_seconds", "timeout_seconds"});
  read_string(n, "salad", "organization", s.organization);
  read_string(n, "salad", "project", s.project);
  read_string(n, "salad", "container_group", s.container_group);
  read_string(n, "salad", "api_base_url", s.api_base_url);
  read_string(n, "salad", "worker_image_key", s.worker_image_key);
  read_int(n, "salad", "max_replicas", 0, 10000, s.max_replicas);
  read_int(n, "salad", "interval_seconds", 1, 86400, s.interval_seconds);
  read_int(n, "salad", "timeout_seconds", 1, 600, s.timeout_seconds);
  if (!s.enabled()) throw key_error{"salad", "needs organization, project and container_group"};
  if (s.api_base_url.rfind("https://", 0) != 0 && s.api_base_url.rfind("http://", 0) != 0)
    throw key_error{"salad.api_base_url", "expected an http:// or https:// URL, got '" + s.api_base_url + "'"};
  return s;
}

}  // namespace baton::config::detail
