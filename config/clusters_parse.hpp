#pragma once
// Parses and resolves the `clusters:` list (extends, templates, validation). Throws
// detail::key_error naming the dotted key ("clusters[1].partition").
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/clusters.hpp"

namespace baton::config::detail {

std::vector<cluster_config> parse_clusters(const YAML::Node& list, const std::string& config_file);
provisioning_config parse_provisioning(const YAML::Node& map);
salad_config parse_salad(const YAML::Node& map);

}  // namespace baton::config::detail
