#include "core/provisioning/provisioning_basis.hpp"
#include "core/events/payload_numbers.hpp"
#include "core/util/time.hpp"

namespace baton::core {

ev::cluster_spec_record to_record(const cluster_spec& c) {
  ev::cluster_spec_record r;
  r.name = c.name;
  r.images = c.images;
  r.strategy = c.strategy;
  r.jit_threshold_seconds = c.jit_threshold_us / 1'000'000;
  r.max_pending = c.max_pending;
  r.gpu_type = c.gpu_type;
  r.gpu_count = c.gpu_count;
  r.wall_time_seconds = c.wall_time_seconds;
  return r;
}

cluster_spec spec_of(const ev::cluster_spec_record& r) {
  cluster_spec c;
  c.name = r.name.value_or("");
  c.images = r.images.value_or(std::vector<std::string>{});
  c.strategy = r.strategy.value_or(c.strategy);
  c.jit_threshold_us = scaled_or(r.jit_threshold_seconds, c.jit_threshold_us, 1'000'000);
  c.max_pending = r.max_pending.value_or(c.max_pending);
  c.gpu_type = r.gpu_type.value_or("");
  c.gpu_count = r.gpu_count.value_or(0);
  c.wall_time_seconds = r.wall_time_seconds.value_or(0);
  return c;
}

namespace {

// The stale workers a decision about `image` could have counted: idle workers of that image.
std::vector<std::string> relevant_stale(const world& w, const std::string& image, const std::set<std::string>& stale) {
  std::vector<std::string> out;
  for (const auto& id : stale) {
    const worker* wk = w.find_worker(id);
    if (wk && !wk->gone && !wk->placeholder && wk->worker_image_key == image) out.push_back(id);
  }
  return out;
}

std::set<std::string> stale_of(const std::optional<ev::provisioning_basis_record>& basis) {
  if (!basis) return {};
  return {basis->stale.begin(), basis->stale.end()};
}

}  // namespace

void record_plan_basis(std::vector<submission_plan>& plans, const world& w, const cluster_spec& c,
                       const std::set<std::string>& stale, const deadline_rule& rule, time_us soon, time_us now) {
  for (auto& p : plans) {
    auto& b = p.record.basis.emplace();
    b.based_on = w.applied;
    b.at = util::format_time_us(now);
    b.stale = relevant_stale(w, p.image, stale);
    b.cluster = to_record(c);
    b.deadlines = to_record(rule);
    b.soon_seconds = soon / 1'000'000;
  }
}

void record_target_basis(replica_target& t, const world& w, const std::set<std::string>& stale) {
  auto& b = t.record.basis.emplace();
  b.based_on = w.applied;
  b.stale = relevant_stale(w, t.record.image, stale);
}

std::optional<uint64_t> basis_point(const std::optional<ev::provisioning_basis_record>& basis) {
  return basis ? basis->based_on : std::nullopt;
}

std::optional<ev::placeholder_plan_record> replan_submission(const world& w, const ev::placeholder_plan_record& recorded) {
  const auto& b = recorded.basis;
  const auto spec = b && b->cluster ? spec_of(*b->cluster) : cluster_spec{};
  const auto now = b && b->at ? util::parse_time_us(*b->at).value_or(0) : 0;
  const auto rule = b && b->deadlines ? rule_of(*b->deadlines) : deadline_rule{};
  const time_us soon = b ? scaled_or(b->soon_seconds, 0, 1'000'000) : 0;
  for (auto& p : plan_submissions(w, spec, stale_of(b), rule, soon, now))
    if (p.image == recorded.image.value_or("")) return std::move(p.record);
  return std::nullopt;
}

ev::cloud_scaled retarget_salad(const world& w, const ev::cloud_scaled& recorded) {
  return salad_target(w, recorded.image, recorded.max_replicas, stale_of(recorded.basis)).record;
}

}  // namespace baton::core
