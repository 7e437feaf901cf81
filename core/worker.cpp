#include "core/worker.hpp"
#include "core/payload_numbers.hpp"
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
const known_model known_models[] = {{"H100", {6, 94}}, {"A100", {5, 80}},     {"A6000", {4, 48}},
                                    {"RTX 4090", {3, 24}}, {"A10", {2, 24}}, {"A30", {1, 24}}};

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
  json p = {{"platform", to_string(c.kind)},
            {"gpu_model", c.gpu_model},
            {"gpu_count", c.gpu_count},
            {"vram_gb", c.vram_gb},
            {"worker_image_key", c.worker_image_key},
            {"provider_id", c.provider_id},
            {"credential_sha256", c.credential_sha256}};
  if (c.allocation_ends_at) p["allocation_ends_at"] = util::format_time_us(c.allocation_ends_at);
  if (!c.driver_version.empty()) p["driver_version"] = c.driver_version;  // only when known: older logs stay equal
  decision d;
  if (placeholder) {
    if (placeholder->worker_image_key != c.worker_image_key) {
      std::string msg = "worker image does not match queued provider allocation: expected " +
                        placeholder->worker_image_key + ", got " + c.worker_image_key;
      return decision::refuse({error_kind::conflict, "worker_image_mismatch", msg, json::object(), "worker_image_key"});
    }
    d.events.push_back({worker_stream(placeholder->id), "worker.placeholder_adopted", std::move(p)});
  } else {
    d.events.push_back({worker_stream(c.id), "worker.registered", std::move(p)});
  }
  return d;
}

decision decide_deregister(const worker& w, time_us now) {
  if (w.gone) return decision::refuse(not_found("Worker", w.id));
  decision d;
  d.events.push_back({worker_stream(w.id), "worker.deregistered", json::object()});
  return d;
}

decision decide_rotate_credential(const worker& w, const std::string& credential_sha256, int64_t grace_seconds,
                                  time_us now) {
  if (w.gone || w.placeholder) return decision::refuse(not_found("Worker", w.id));
  decision d;
  d.events.push_back({worker_stream(w.id), "worker.credential_rotated",
                      {{"credential_sha256", credential_sha256},
                       {"grace_seconds", grace_seconds},
                       {"previous_valid_until_us", now + grace_seconds * 1'000'000}}});
  return d;
}

decision decide_reap(const worker& w, time_us last_heartbeat, time_us now) {
  if (w.gone) return {};
  decision d;
  d.events.push_back({worker_stream(w.id), "worker.reaped",
                      {{"last_heartbeat_at", util::format_time_us(last_heartbeat)},
                       {"silent_seconds", static_cast<double>(now - last_heartbeat) / 1e6}}});
  return d;
}

void evolve(worker& w, const std::string& type, const json& p, time_us at) {
  if (type == "worker.placeholder_created") {
    // A pending Slurm allocation (written by the cluster actors): provisioning, never assigned.
    w.kind = platform::hpc;
    set_gpu_model(w, p.value("gpu_model", ""));
    w.gpu_count = number_or(p, "gpu_count", 0);
    w.worker_image_key = p.value("worker_image_key", "");
    w.provider_id = p.value("provider_id", "");
    w.wall_time_seconds = number_or(p, "wall_time_seconds", int64_t{0});
    w.registration_sha256 = p.value("registration_sha256", "");
    w.placeholder = true;
    w.registered_at = at;
  } else if (type == "worker.placeholder_removed") {
    w.registration_sha256.clear();
    w.gone = true;
    w.placeholder = false;
    w.gone_reason = p.value("reason", "allocation_gone");
    w.gone_at = at;
  } else if (type == "worker.registered" || type == "worker.placeholder_adopted") {
    w.kind = platform_from(p.value("platform", "hpc")).value_or(platform::hpc);
    set_gpu_model(w, p.value("gpu_model", ""));
    w.gpu_count = number_or(p, "gpu_count", 0);
    w.vram_gb = p.value("vram_gb", 0.0);
    w.driver_version = p.value("driver_version", "");
    w.worker_image_key = p.value("worker_image_key", "");
    w.provider_id = p.value("provider_id", "");
    w.credential = rotating_secret{p.value("credential_sha256", ""), "", 0};
    // Written by decide_register from a time it parsed; an unreadable one would be a damaged log.
    w.allocation_ends_at = 0;
    if (auto it = p.find("allocation_ends_at"); it != p.end() && it->is_string())
      w.allocation_ends_at = util::parse_time_us(it->get<std::string>()).value_or(0);
    w.placeholder = false;
    w.registration_sha256.clear();  // spent
    w.registered_at = at;
  } else if (type == "worker.credential_rotated") {
    rotate(w.credential, p.value("credential_sha256", ""), number_or(p, "previous_valid_until_us", time_us{0}));
  } else if (type == "worker.deregistered" || type == "worker.reaped") {
    w.gone = true;
    w.gone_reason = type == "worker.deregistered" ? "deregistered" : "reaped";
    w.gone_at = at;
  }
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
