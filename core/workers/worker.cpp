#include "core/workers/worker.hpp"
#include "core/util/time.hpp"

namespace baton::core {

using nlohmann::json;

const char* to_string(platform p) { return p == platform::hpc ? "hpc" : "salad"; }

std::optional<platform> platform_from(const std::string& s) {
  if (s == "hpc") return platform::hpc;
  if (s == "salad") return platform::salad;
  return std::nullopt;
}

namespace {

struct known_model {
  std::string_view name;
  gpu_model_facts facts;
};
const known_model known_models[] = {{"H100", {6, 94}},     {"A100", {5, 80}}, {"A6000", {4, 48}},
                                    {"RTX 4090", {3, 24}}, {"A10", {2, 24}},  {"A30", {1, 24}}};

}  // namespace

gpu_model_facts facts_of_gpu_model(std::string_view gpu_model) {
  // Longest name first, so "A100" is not taken for "A10" and "RTX A6000" finds "A6000".
  const known_model* best = nullptr;
  for (const auto& m : known_models)
    if (gpu_model.find(m.name) != std::string_view::npos && (!best || m.name.size() > best->name.size())) best = &m;
  return best ? best->facts : gpu_model_facts{};
}

void set_gpu_model(worker& w, std::string gpu_model) {
  w.model = facts_of_gpu_model(gpu_model);
  w.gpu_model = std::move(gpu_model);
}

std::string worker::cluster() const {
  auto colon = provider_id.find(':');
  return colon == std::string::npos ? "" : provider_id.substr(0, colon);
}

std::string worker_stream(const std::string& id) { return "worker/" + id; }

std::string fingerprint_of(const worker& w) {
  return w.gpu_model + "/" + (w.driver_version.empty() ? "unknown" : w.driver_version);
}

decision decide_register(const worker* placeholder, const register_worker& c, time_us now) {
  // What the worker said of itself, the same for a new worker and an adopted placeholder.
  auto said = [&](auto p) {
    p.platform = to_string(c.kind);
    p.gpu_model = c.gpu_model;
    p.gpu_count = c.gpu_count;
    p.vram_gb = c.vram_gb;
    p.worker_image_key = c.worker_image_key;
    p.provider_id = c.provider_id;
    p.credential_sha256 = c.credential_sha256;
    if (c.allocation_ends_at) p.allocation_ends_at = util::format_time_us(c.allocation_ends_at);
    if (!c.driver_version.empty()) p.driver_version = c.driver_version;  // only when known: older logs stay equal
    return p;
  };
  if (!placeholder) return decision::of(worker_stream(c.id), said(ev::worker_registered{}));
  if (placeholder->worker_image_key != c.worker_image_key) {
    std::string msg = "worker image does not match queued provider allocation: expected " + placeholder->worker_image_key +
                      ", got " + c.worker_image_key;
    return decision::refuse({error_kind::conflict, "worker_image_mismatch", msg, json::object(), "worker_image_key"});
  }
  return decision::of(worker_stream(placeholder->id), said(ev::worker_placeholder_adopted{}));
}

decision decide_deregister(const worker& w, time_us now) {
  if (w.gone) return decision::refuse(not_found("Worker", w.id));
  return decision::of(worker_stream(w.id), ev::worker_deregistered{});
}

decision decide_rotate_credential(const worker& w, const std::string& credential_sha256, int64_t grace_seconds, time_us now) {
  if (w.gone || w.placeholder) return decision::refuse(not_found("Worker", w.id));
  return decision::of(worker_stream(w.id),
                      ev::worker_credential_rotated{credential_sha256, grace_seconds, now + grace_seconds * 1'000'000});
}

decision decide_reap(const worker& w, time_us last_heartbeat, time_us now) {
  if (w.gone) return {};
  ev::worker_reaped p;
  p.last_heartbeat_at = util::format_time_us(last_heartbeat);
  p.silent_seconds = static_cast<double>(now - last_heartbeat) / 1e6;
  return decision::of(worker_stream(w.id), std::move(p));
}

namespace {

template <class R>
void registered(worker& w, const R& p, time_us at) {
  w.kind = platform_from(p.platform.empty() ? std::string("hpc") : p.platform).value_or(platform::hpc);
  set_gpu_model(w, p.gpu_model);
  w.gpu_count = p.gpu_count;
  w.vram_gb = p.vram_gb;
  w.driver_version = p.driver_version.value_or("");
  w.worker_image_key = p.worker_image_key;
  w.provider_id = p.provider_id;
  w.credential = rotating_secret{p.credential_sha256, "", 0};
  // Written by decide_register from a time it parsed; an unreadable one would be a damaged log.
  w.allocation_ends_at = p.allocation_ends_at ? util::parse_time_us(*p.allocation_ends_at).value_or(0) : 0;
  w.placeholder = false;
  w.registration_sha256.clear();  // spent
  w.registered_at = at;
}

}  // namespace

void evolve(worker& w, const ev::payload& payload, time_us at) {
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, ev::worker_placeholder_created>) {
          // A pending Slurm allocation (written by the cluster actors): provisioning, never assigned.
          w.kind = platform::hpc;
          set_gpu_model(w, p.gpu_model);
          w.gpu_count = p.gpu_count;
          w.worker_image_key = p.worker_image_key;
          w.provider_id = p.provider_id;
          w.wall_time_seconds = p.wall_time_seconds;
          w.registration_sha256 = p.registration_sha256.value_or("");
          w.placeholder = true;
          w.registered_at = at;
        } else if constexpr (std::is_same_v<T, ev::worker_placeholder_removed>) {
          w.registration_sha256.clear();
          w.gone = true;
          w.placeholder = false;
          w.gone_reason = p.reason;
          w.gone_at = at;
        } else if constexpr (std::is_same_v<T, ev::worker_registered> || std::is_same_v<T, ev::worker_placeholder_adopted>) {
          registered(w, p, at);
        } else if constexpr (std::is_same_v<T, ev::worker_credential_rotated>) {
          rotate(w.credential, p.credential_sha256, p.previous_valid_until_us);
        } else if constexpr (std::is_same_v<T, ev::worker_deregistered> || std::is_same_v<T, ev::worker_reaped>) {
          w.gone = true;
          w.gone_reason = std::is_same_v<T, ev::worker_deregistered> ? "deregistered" : "reaped";
          w.gone_at = at;
        }
      },
      payload);
}

json to_json(const worker& w, const std::string& derived_state, std::optional<time_us> last_heartbeat) {
  return {{"id", w.id},
          {"platform", to_string(w.kind)},
          {"gpu_model", w.gpu_model},
          {"gpu_count", w.gpu_count},
          {"vram_gb", w.vram_gb},
          {"driver_version", w.driver_version.empty() ? json(nullptr) : json(w.driver_version)},
          {"fingerprint", w.placeholder ? json(nullptr) : json(fingerprint_of(w))},
          {"status", w.placeholder ? "queued" : (w.gone ? "gone" : "active")},
          {"state", derived_state},
          {"worker_image_key", w.worker_image_key},
          {"provider_id", w.provider_id.empty() ? json(nullptr) : json(w.provider_id)},
          {"cluster", w.cluster().empty() ? json(nullptr) : json(w.cluster())},
          {"last_heartbeat", last_heartbeat ? json(util::format_time_us(*last_heartbeat)) : json(nullptr)},
          {"registered_at", util::format_time_us(w.registered_at)},
          {"gone_reason", w.gone ? json(w.gone_reason) : json(nullptr)},
          {"gone_at", w.gone ? json(util::format_time_us(w.gone_at)) : json(nullptr)},
          {"allocation_ends_at", w.allocation_ends_at ? json(util::format_time_us(w.allocation_ends_at)) : json(nullptr)},
          {"wall_time_seconds", w.wall_time_seconds ? json(w.wall_time_seconds) : json(nullptr)}};
}

}  // namespace baton::core
