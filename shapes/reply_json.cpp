#include "shapes/reply_json.hpp"

#include <cmath>

#include "core/util/time.hpp"
#include "core/jobs/job_text.hpp"
#include "events/json_text.hpp"

namespace baton::shapes {
namespace {

using nlohmann::json;
namespace R = core::results;

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// A stored bundle's digest and size, as poll answers and job rows show it (docs/storage.md); the
// digest is 64 hex digits (core::parse_blob_uri), so it needs no escaping.
std::string blob_text(const core::blob_ref& b) {
  return "{\"sha256\":\"" + b.sha256 + "\",\"size\":" + std::to_string(b.size) + "}";
}

json preempt_json(const R::preempt_notice& n) {
  return {{"job_id", n.job_id}, {"by", n.by}, {"mode", n.mode}, {"grace_until", util::format_time_us(n.grace_until)}};
}

// Infinity (a Level FS without usage) has no JSON number: sshare prints "inf".
json number_or_inf(double x) { return std::isinf(x) ? json("inf") : json(x); }

json factor_json(const core::priority_factor& f) {
  return {{"raw", f.raw}, {"normalized", f.normalized}, {"weighted", f.weighted}};
}

// One line of sprio -l: the job, its user and account, each factor raw, normalised, weighted.
json priority_row_json(const R::priority_row& r) {
  const auto& e = r.explained;
  json out = {{"job_id", r.j.id},
              {"title", r.j.title},
              {"user", r.j.user},
              {"account", r.j.account},
              {"partition", r.j.partition},
              {"qos", r.j.qos},
              {"nice", r.j.nice},
              {"gpu_count", r.j.gpu_count},
              {"priority", e.priority},
              {"priority_tier", e.tier},
              {"pending_reason", or_null(r.pending_reason)},
              {"held", r.j.held},
              {"preemptor", e.preemptor}};
  if (!r.pending_detail.empty()) out["pending_detail"] = r.pending_detail;
  if (e.policy == "multifactor") {
    const auto& m = e.multifactor;
    out["factors"] = {{"age", factor_json(m.age)},           {"fairshare", factor_json(m.fairshare)},
                      {"job_size", factor_json(m.job_size)}, {"partition", factor_json(m.partition)},
                      {"qos", factor_json(m.qos)},           {"nice", m.nice}};
  } else if (e.policy.rfind("lattice:", 0) == 0) {
    json fs = json::object();
    for (size_t i = 0; i < 9; ++i)
      fs["f" + std::to_string(i + 1)] = {{"value", e.lattice.f[i]}, {"weighted", e.lattice.weighted[i]}};
    out["factors"] = std::move(fs);
    out["score"] = e.lattice.score;
  }
  return out;
}

json worker_json(const R::worker_row& row) {
  auto out = core::to_json(row.w, row.state, row.last_heartbeat);
  out["job_id"] = row.job_id ? json(*row.job_id) : json(nullptr);
  if (row.provider_hidden) out["provider_id"] = nullptr;  // (its cluster stays)
  out["score"] = row.score;
  return out;
}

template <class Page, class Fn>
json page_json(const Page& p, Fn item) {
  json items = json::array();
  for (const auto& i : p.items) items.push_back(item(i));
  return {{"items", items}, {"total", p.total}, {"offset", p.offset}, {"limit", p.limit}};
}

void append_job_text(std::string& out, const R::job_row& row, core::time_us at) {
  out += '{';
  core::json_fields f(out);
  core::append_job_fields(f, row.j, at);
  f.text_or_null("queue_blocked_reason", row.queue_blocked_reason);
  f.text_or_null("pending_reason", row.pending_reason);
  if (!row.pending_detail.empty()) f.text("pending_detail", row.pending_detail);
  // A stored bundle (docs/storage.md): its digest and size beside the path that names it.
  if (auto b = core::parse_blob_uri(row.j.input_bundle_path)) {
    f.key("input_bundle");
    out += blob_text(*b);
  }
  // The last plan's reservation: when and on which worker (or pending allocation) it should start.
  if (row.reservation) {
    f.time("expected_start", row.reservation->start);
    f.text("expected_worker_id", row.reservation->worker_id);
  } else {
    f.null("expected_start");
    f.null("expected_worker_id");
  }
  if (row.j.pruned) f.boolean("pruned", true);  // read from the log (include_pruned, or GET /jobs/{id})
  if (row.array) {
    f.text("array_id", row.array->array_id);
    f.integer("array_index", row.array->index);
  }
  out += '}';
}

}  // namespace

std::string job_text(const R::job_row& row, core::time_us at) {
  std::string out;
  out.reserve(2048);
  append_job_text(out, row, at);
  return out;
}

std::string job_page_text(const R::job_page& p, core::time_us at) {
  std::string out;
  out.reserve(64 + 2048 * p.items.size());
  out += "{\"items\":[";
  for (size_t i = 0; i < p.items.size(); ++i) {
    if (i) out += ',';
    append_job_text(out, p.items[i], at);
  }
  out += "],\"limit\":" + std::to_string(p.limit) + ",\"offset\":" + std::to_string(p.offset) +
         ",\"total\":" + std::to_string(p.total) + '}';
  return out;
}

json error_body(const core::domain_error& e) {
  json body = {{"detail", e.message}, {"error", e.code}, {"message", e.message}};
  if (!e.field.empty()) body["field"] = e.field;
  if (e.details.is_object()) body.update(e.details);  // the facts; may replace "detail" with RelayMD's object
  return body;
}

// A poll's answer, the most frequent reply, written by hand (its one writer: body_of reads it
// back): building it as JSON and dumping it cost a fifth of an assigning poll's instructions.
// Keys in nlohmann's order, as reply_json would dump them (tests/reply_shapes_test.cpp).
std::string poll_answer_text(const R::poll_answer& v) {
  using events::append_json_string;
  using events::invalid_utf8;
  std::string out;
  if (!v.assigned) {
    out.reserve(48 + v.no_job_reason.size());
    out += "{\"reason\":";
    append_json_string(out, v.no_job_reason, invalid_utf8::replace);
    out += ",\"status\":\"no_job_available\"}";
    return out;
  }
  const auto& a = *v.assigned;
  out.reserve(140 + a.job_id.size() + a.input_bundle_path.size() + a.latest_checkpoint_manifest_path.size());
  out += '{';
  if (a.array) {  // (keys in order: "array_id" < "array_index" < "attempt")
    out += "\"array_id\":";
    append_json_string(out, a.array->array_id, invalid_utf8::replace);
    out += ",\"array_index\":" + std::to_string(a.array->index) + ",";
  }
  out += "\"attempt\":";
  out += std::to_string(a.attempt);
  if (auto b = core::parse_blob_uri(a.input_bundle_path)) {
    out += ",\"input_bundle\":" + blob_text(*b);
  }
  out += ",\"input_bundle_path\":";
  append_json_string(out, a.input_bundle_path, invalid_utf8::replace);
  out += ",\"job_id\":";
  append_json_string(out, a.job_id, invalid_utf8::replace);
  out += ",\"latest_checkpoint_manifest_path\":";
  if (a.latest_checkpoint_manifest_path.empty())
    out += "null";
  else
    append_json_string(out, a.latest_checkpoint_manifest_path, invalid_utf8::replace);
  out += ",\"status\":\"assigned\"}";
  return out;
}

json body_of(const core::result& r, core::time_us at) {
  return std::visit(
      [&](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, R::job_row>) {
          return json::parse(job_text(v, at));
        } else if constexpr (std::is_same_v<T, R::job_page>) {
          return json::parse(job_page_text(v, at));
        } else if constexpr (std::is_same_v<T, R::worker_page>) {
          return page_json(v, worker_json);
        } else if constexpr (std::is_same_v<T, R::registered>) {
          return {{"worker_id", v.worker_id},
                  {"heartbeat_interval_seconds", v.heartbeat_interval_seconds},
                  {"stale_after_seconds", v.stale_after_seconds}};
        } else if constexpr (std::is_same_v<T, R::poll_answer>) {
          return json::parse(poll_answer_text(v));
        } else if constexpr (std::is_same_v<T, R::storage_plan> || std::is_same_v<T, R::stored> ||
                             std::is_same_v<T, R::job_files> || std::is_same_v<T, R::blobs_to_remove>) {
          return nullptr;  // shaped by http/file_routes.cpp, which adds the transfers
        } else if constexpr (std::is_same_v<T, R::control>) {
          json out = {
              {"job_id", v.job_id}, {"status", core::to_string(v.status)}, {"cancellation_requested", v.cancellation_requested}};
          out["preemption_requested"] = v.preempt.has_value();
          if (v.preempt) out["preempt"] = preempt_json(*v.preempt);
          return out;
        } else if constexpr (std::is_same_v<T, R::heartbeat_ack>) {
          return {{"status", "ok"}, {"preempt", preempt_json(v.preempt)}};
        } else if constexpr (std::is_same_v<T, R::pruned>) {
          return {{"deleted", v.count}, {"pruned", v.count}};
        } else if constexpr (std::is_same_v<T, R::clusters>) {
          json items = json::array();
          for (const auto& c : v.items)
            items.push_back({{"name", c.spec.name},
                             {"enabled", c.enabled},
                             {"strategy", c.spec.strategy},
                             {"worker_images", c.spec.images},
                             {"max_pending_jobs", c.spec.max_pending},
                             {"pending_placeholders", c.pending_placeholders},
                             {"workers", c.workers},
                             {"last_submission_failure", c.last_submission_failure}});
          return items;
        } else if constexpr (std::is_same_v<T, R::cluster_toggled>) {
          return {{"name", v.name}, {"enabled", v.enabled}};
        } else if constexpr (std::is_same_v<T, R::worker_images>) {
          json items = json::array();
          for (const auto& k : v.keys) items.push_back({{"key", k}, {"display_name", k}});
          return {{"default_worker_image", v.default_image}, {"worker_images", items}};
        } else if constexpr (std::is_same_v<T, R::warnings>) {
          return v.items;
        } else if constexpr (std::is_same_v<T, R::salad_view>) {
          json out = v.last.is_object() ? v.last : json::object();
          out["enabled"] = true;
          out["worker_image_key"] = v.worker_image_key;
          out["max_replicas"] = v.max_replicas;
          out["wanted_now"] = core::to_json(v.wanted_now);
          return out;
        } else if constexpr (std::is_same_v<T, R::cluster_watch>) {
          return {{"slurm_ids", v.placeholder_slurm_ids}, {"stale_slurm_ids", v.stale_slurm_ids}};
        } else if constexpr (std::is_same_v<T, R::plans>) {
          json items = json::array();
          for (const auto& p : v.items)
            items.push_back({{"image", p.image}, {"count", p.count}, {"record", events::to_json(p.record)}});
          return {{"plans", items}};
        } else if constexpr (std::is_same_v<T, R::placeholder_made>) {
          return {{"worker_id", v.worker_id}};
        } else if constexpr (std::is_same_v<T, R::priorities>) {
          json items = json::array();
          for (const auto& row : v.items) items.push_back(priority_row_json(row));
          const auto& w = v.weights;
          return {{"policy", v.policy},
                  {"calculated_at", v.calculated_at ? json(util::format_time_us(v.calculated_at)) : json(nullptr)},
                  {"weights",
                   {{"age", w.age},
                    {"fairshare", w.fairshare},
                    {"job_size", w.job_size},
                    {"partition", w.partition},
                    {"qos", w.qos}}},
                  {"jobs", std::move(items)},
                  {"total", v.total},
                  {"offset", v.offset},
                  {"limit", v.limit ? json(v.limit) : json(nullptr)}};
        } else if constexpr (std::is_same_v<T, R::fairshare>) {
          json rows = json::array();
          for (const auto& r : v.rows) {
            json row = {{"account", r.account},
                        {"user", or_null(r.user)},
                        {"depth", r.depth},
                        {"raw_shares", r.raw_shares},
                        {"norm_shares", r.norm_shares},
                        {"raw_usage", r.raw_usage},
                        {"effective_usage", r.effective_usage},
                        {"level_fs", number_or_inf(r.level_fs)},
                        {"fair_share", r.user.empty() ? json(nullptr) : json(r.fair_share)}};
            if (!r.user.empty()) {
              auto rec = v.recorded.find(core::association_of(r.depth == 0 ? "root" : r.account, r.user));
              row["fair_share_in_use"] = rec == v.recorded.end() ? json(nullptr) : json(rec->second.fair_share);
            }
            rows.push_back(std::move(row));
          }
          return {{"policy", v.policy},
                  {"calculated_at", v.calculated_at ? json(util::format_time_us(v.calculated_at)) : json(nullptr)},
                  {"associations", std::move(rows)}};
        } else if constexpr (std::is_same_v<T, R::operators>) {
          json items = json::array();
          for (const auto& o : v.items)
            items.push_back(
                {{"name", o.name},
                 {"role", o.admin ? "admin" : "user"},
                 {"accounts", o.accounts},
                 {"revoked", o.revoked},
                 {"created_at", o.created_at ? json(util::format_time_us(o.created_at)) : json(nullptr)},
                 {"token_rotated_at", o.token_rotated_at ? json(util::format_time_us(o.token_rotated_at)) : json(nullptr)}});
          return items;
        } else if constexpr (std::is_same_v<T, R::rotated>) {
          return {{"name", v.name}, {"previous_token_valid_until", util::format_time_us(v.previous_valid_until)}};
        } else if constexpr (std::is_same_v<T, R::counted>) {
          return {{"count", v.count}};
        } else if constexpr (std::is_same_v<T, R::jobs_created>) {
          json jobs = json::array();
          for (const auto& i : v.items) {
            json one = {{"id", i.id}, {"priority", i.priority}};
            if (i.array_index) one["array_index"] = *i.array_index;
            if (!i.pending_detail.empty()) one["pending_detail"] = i.pending_detail;
            jobs.push_back(std::move(one));
          }
          json out = {{"created", v.items.size()}, {"jobs", std::move(jobs)}};
          if (!v.array_id.empty()) out["array_id"] = v.array_id;
          return out;
        } else if constexpr (std::is_same_v<T, R::array_acted>) {
          return {{"array_id", v.array_id}, {"changed", v.changed}, {"unchanged", v.unchanged}};
        } else if constexpr (std::is_same_v<T, R::metrics>) {
          json workers = json::array();
          for (const auto& [key, n] : v.workers) workers.push_back({{"state", key.first}, {"cluster", key.second}, {"count", n}});
          return {{"jobs", v.jobs}, {"eligible_queued", v.eligible_queued}, {"workers", std::move(workers)}};
        } else {
          static_assert(std::is_same_v<T, core::replica_target>);
          return {{"target", v.target}, {"record", core::to_json(v)}};
        }
      },
      r);
}

}  // namespace baton::shapes
