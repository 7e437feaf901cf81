#include "core/provisioning/provisioning_basis.hpp"
#include "core/events/payload_numbers.hpp"
#include "core/util/time.hpp"

namespace baton::core {

using nlohmann::json;

json to_json(const cluster_spec& c) {
  return {{"name", c.name},
          {"images", c.images},
          {"strategy", c.strategy},
          {"jit_threshold_seconds", c.jit_threshold_us / 1'000'000},
          {"max_pending", c.max_pending},
          {"gpu_type", c.gpu_type},
          {"gpu_count", c.gpu_count},
          {"wall_time_seconds", c.wall_time_seconds}};
}

cluster_spec cluster_spec_from_json(const json& j) {
  cluster_spec c;
  c.name = j.value("name", "");
  c.images = j.value("images", std::vector<std::string>{});
  c.strategy = j.value("strategy", c.strategy);
  c.jit_threshold_us = scaled_or(j, "jit_threshold_seconds", c.jit_threshold_us, 1'000'000);
  c.max_pending = number_or(j, "max_pending", c.max_pending);
  c.gpu_type = j.value("gpu_type", "");
  c.gpu_count = number_or(j, "gpu_count", 0);
  c.wall_time_seconds = number_or(j, "wall_time_seconds", int64_t{0});
  return c;
}

namespace {

// The stale workers a decision about `image` could have counted: idle workers of that image.
json relevant_stale(const world& w, const std::string& image, const std::set<std::string>& stale) {
  json out = json::array();
  for (const auto& id : stale) {
    const worker* wk = w.find_worker(id);
    if (wk && !wk->gone && !wk->placeholder && wk->worker_image_key == image) out.push_back(id);
  }
  return out;
}

std::set<std::string> stale_of(const json& basis) {
  std::set<std::string> out;
  for (const auto& id : basis.value("stale", json::array())) out.insert(id.get<std::string>());
  return out;
}

}  // namespace

void record_plan_basis(std::vector<submission_plan>& plans, const world& w, const cluster_spec& c,
                       const std::set<std::string>& stale, const deadline_rule& rule, time_us soon, time_us now) {
  for (auto& p : plans)
    p.record["basis"] = {{"based_on", w.applied}, {"at", util::format_time_us(now)}, {"stale", relevant_stale(w, p.image, stale)},
                         {"cluster", to_json(c)}, {"deadlines", to_json(rule)},      {"soon_seconds", soon / 1'000'000}};
}

void record_target_basis(replica_target& t, const world& w, const std::set<std::string>& stale) {
  t.record["basis"] = {{"based_on", w.applied}, {"stale", relevant_stale(w, t.record.value("image", ""), stale)}};
}

std::optional<uint64_t> basis_point(const json& record) {
  auto b = record.find("basis");
  if (b == record.end() || !b->is_object() || !b->contains("based_on")) return std::nullopt;
  if (!b->at("based_on").is_number()) return std::nullopt;
  return number_or(*b, "based_on", uint64_t{0});
}

json without_basis(json record) {
  record.erase("basis");
  return record;
}

json replan_submission(const world& w, const json& record) {
  const auto& b = record.at("basis");
  auto spec = cluster_spec_from_json(b.at("cluster"));
  auto now = util::parse_time_us(b.value("at", "")).value_or(0);
  auto plans = plan_submissions(w, spec, stale_of(b), deadline_rule_from_json(b.value("deadlines", json::object())),
                                scaled_or(b, "soon_seconds", 0, 1'000'000), now);
  const auto image = record.value("image", "");
  for (const auto& p : plans)
    if (p.image == image) return p.record;
  return nullptr;
}

json retarget_salad(const world& w, const json& record) {
  const auto& b = record.at("basis");
  return salad_target(w, record.value("image", ""), number_or(record, "max_replicas", 0), stale_of(b)).record;
}

}  // namespace baton::core
