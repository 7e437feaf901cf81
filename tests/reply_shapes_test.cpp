// http::to_response writes a poll's answer and a job's by hand: a poll's must be its JSON shape
// as nlohmann dumps it (its key order, escapes, invalid UTF-8 replaced), byte for byte; a job's
// (and a page of jobs) the same values, each key once; and body_of() must read the same back.
#include "http/reply_shapes.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/storage/storage.hpp"
#include "core/util/time.hpp"
#include "http/message.hpp"

using nlohmann::json;
namespace R = baton::core::results;

namespace {

// The shape RelayMD's workers read, built as nlohmann JSON (the reference for the hand writer).
json shape(const R::poll_answer& v) {
  if (!v.assigned) return {{"status", "no_job_available"}, {"reason", v.no_job_reason}};
  const auto& a = *v.assigned;
  json out = {{"status", "assigned"},
              {"job_id", a.job_id},
              {"input_bundle_path", a.input_bundle_path},
              {"latest_checkpoint_manifest_path",
               a.latest_checkpoint_manifest_path.empty() ? json(nullptr) : json(a.latest_checkpoint_manifest_path)},
              {"attempt", a.attempt}};
  if (auto b = baton::core::parse_blob_uri(a.input_bundle_path)) out["input_bundle"] = {{"sha256", b->sha256}, {"size", b->size}};
  if (a.array) {
    out["array_id"] = a.array->array_id;
    out["array_index"] = a.array->index;
  }
  return out;
}

std::string dumped(const baton::core::reply& r) {
  const json expected = shape(std::get<R::poll_answer>(r.value));
  // (body_of reads the written text back: the same values as the reference, replaced bytes aside)
  const json read_back = baton::http::body_of(r.value, r.at);
  EXPECT_EQ(read_back.dump(-1, ' ', false, json::error_handler_t::replace),
            expected.dump(-1, ' ', false, json::error_handler_t::replace));
  return expected.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

TEST(ReplyShapes, APollsAnswerIsWrittenAsTheJsonItsShapeDumps) {
  const std::vector<std::string> texts = {"",
                                          "6f1c1d8e-2b7a-4c1e-9a51-3b2f0e7d9c11",
                                          "/bundles/quote\" back\\slash",
                                          "tab\tnl\ncr\rbs\bff\f ctl\x01\x1f\x7f",
                                          "caf\xc3\xa9 \xe2\x9c\x93",
                                          "an escape \" before caf\xc3\xa9",
                                          "bad \xff\xfe utf-8 \xc3",
                                          "blob:" + std::string(64, 'a') + ":1234"};  // a stored bundle
  size_t checked = 0;
  for (const auto& a : texts)
    for (const auto& b : texts) {
      for (uint32_t attempt : {1u, 7u, 4294967295u}) {
        baton::core::reply r;
        R::assignment assigned{a, b, attempt % 2 ? b : std::string(), attempt, {}};
        if (attempt == 7) assigned.array = baton::core::array_task{b, attempt * 1000};  // a job array's task
        r.value = R::poll_answer{std::move(assigned), ""};
        baton::http::response res;
        baton::http::to_response(r, res);
        EXPECT_EQ(res.status, 200);
        EXPECT_EQ(res.content_type, "application/json");
        EXPECT_EQ(res.body, dumped(r)) << a << " / " << b;
        ++checked;
      }
    }
  for (const auto& reason : texts) {
    baton::core::reply r;
    r.value = R::poll_answer{std::nullopt, reason};
    baton::http::response res;
    baton::http::to_response(r, res);
    EXPECT_EQ(res.body, dumped(r)) << reason;
    EXPECT_EQ(json::parse(res.body)["status"], "no_job_available");
  }
  EXPECT_EQ(checked, texts.size() * texts.size() * 3);
}

namespace {

using baton::core::time_us;

json time_or_null(const std::optional<time_us>& t) { return t ? json(baton::util::format_time_us(*t)) : json(nullptr); }
json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// RelayMD's JobRead and baton's fields as a nlohmann tree: the reference for the hand writer
// (core/jobs/job_text.hpp, shapes/reply_json.cpp), key for key.
json shape(const R::job_row& row, time_us now) {
  const auto& j = row.j;
  double runtime = baton::core::runtime_seconds(j, now);
  json etc = nullptr, ett = nullptr;
  if ((j.status == baton::core::job_status::assigned || j.status == baton::core::job_status::running) && j.progress &&
      *j.progress > 0 && *j.progress < 1) {
    double e = runtime / *j.progress - runtime;
    etc = e;
    ett = runtime + e;
  }
  json deps = json::array();
  for (const auto& d : j.depends_on) deps.push_back({{"job_id", d.job_id}, {"condition", to_string(d.condition)}});
  json out = {
      {"id", j.id},
      {"title", j.title},
      {"status", to_string(j.status)},
      {"input_bundle_path", j.input_bundle_path},
      {"worker_image_key", j.worker_image_key},
      {"preferred_clusters", j.preferred_clusters},
      {"comment", or_null(j.comment)},
      {"queue_blocked_reason", or_null(row.queue_blocked_reason)},
      {"pending_reason", or_null(row.pending_reason)},
      {"assigned_at", time_or_null(j.assigned_at)},
      {"started_at", time_or_null(j.started_at)},
      {"status_changed_at", baton::util::format_time_us(j.status_changed_at)},
      {"created_at", baton::util::format_time_us(j.created_at)},
      {"updated_at", baton::util::format_time_us(j.updated_at)},
      {"latest_checkpoint_manifest_path", or_null(j.latest_checkpoint_manifest_path)},
      {"latest_failure_artifact_path", or_null(j.latest_failure_artifact_path)},
      {"cancellation_requested_at", time_or_null(j.cancellation_requested_at)},
      {"last_checkpoint_at", time_or_null(j.last_checkpoint_at)},
      {"progress", j.progress ? json(*j.progress) : json(nullptr)},
      {"runtime_seconds", runtime},
      {"etc_seconds", etc},
      {"ett_seconds", ett},
      {"progress_codes", j.progress_codes},
      {"checkpoint_cycle_status", or_null(j.checkpoint_cycle_status)},
      {"checkpoint_cycle_failures", j.checkpoint_cycle_failures},
      {"assigned_worker_id", or_null(j.assigned_worker_id)},
      {"attempts", j.attempts},
      {"lost_workers", j.lost_workers},
      {"max_attempts", j.max_attempts},
      {"failure_reason", or_null(j.failure_reason)},
      {"requeued_from", or_null(j.requeued_from)},
      {"requeued_to", j.requeued_to},
      {"user", or_null(j.user)},
      {"account", or_null(j.account)},
      {"partition", or_null(j.partition)},
      {"qos", or_null(j.qos)},
      {"nice", j.nice},
      {"gpu_count", j.gpu_count},
      {"time_limit_seconds", j.time_limit_seconds ? json(*j.time_limit_seconds) : json(nullptr)},
      {"checkpoints", j.checkpoints},
      {"requeue", j.requeue},
      {"interactive", j.interactive},
      {"conformance", or_null(j.conformance)},
      {"checkpoint_seconds", j.checkpoint_seconds ? json(*j.checkpoint_seconds) : json(nullptr)},
      {"preempted_by", or_null(j.preempted_by)},
      {"preempt_mode", or_null(j.preempt_mode)},
      {"preempt_grace_until", j.preempt_grace_until ? json(baton::util::format_time_us(j.preempt_grace_until)) : json(nullptr)},
      {"preemptions", j.preemptions},
      {"held", j.held},
      {"admin_hold", j.admin_hold},
      {"priority", j.priority},
      {"priority_tier", j.priority_tier},
      {"depends_on", deps},
      {"expected_start", row.reservation ? json(baton::util::format_time_us(row.reservation->start)) : json(nullptr)},
      {"expected_worker_id", row.reservation ? json(row.reservation->worker_id) : json(nullptr)}};
  if (!row.pending_detail.empty()) out["pending_detail"] = row.pending_detail;
  if (auto b = baton::core::parse_blob_uri(j.input_bundle_path)) out["input_bundle"] = {{"sha256", b->sha256}, {"size", b->size}};
  if (j.pruned) out["pruned"] = true;
  if (row.array) {
    out["array_id"] = row.array->array_id;
    out["array_index"] = row.array->index;
  }
  return out;
}

// The keys of a JSON object's text at its top level, each as often as the text names it.
std::vector<std::string> top_keys(const std::string& text) {
  std::vector<std::string> keys;
  json::parser_callback_t note = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1) keys.push_back(parsed.get<std::string>());
    return true;
  };
  [[maybe_unused]] const json parsed = json::parse(text, note);
  return keys;
}

}  // namespace

TEST(ReplyShapes, AJobIsWrittenAsTheJsonItsShapeDumps) {
  const std::vector<std::string> texts = {
      "", "plain", "quote\" back\\slash\n", "caf\xc3\xa9", "bad \xff\xfe utf-8 \xc3", "blob:" + std::string(64, 'a') + ":1234"};
  const time_us now = 1'796'600'000'000'000;
  std::mt19937_64 rng(20261206);
  auto text = [&] { return texts[rng() % texts.size()]; };
  auto maybe_time = [&]() -> std::optional<time_us> {
    if (rng() % 2) return std::nullopt;
    return static_cast<time_us>(now - static_cast<time_us>(rng() % 100'000'000'000));
  };
  size_t pages = 0;
  R::job_page page;
  for (int i = 0; i < 2000; ++i) {
    R::job_row row;
    auto& j = row.j;
    j.id = text(), j.title = text(), j.input_bundle_path = text(), j.worker_image_key = text(), j.comment = text();
    j.status = static_cast<baton::core::job_status>(rng() % 8);
    for (size_t n = rng() % 3; n > 0; --n) j.preferred_clusters.push_back(text());
    j.assigned_at = maybe_time(), j.started_at = maybe_time(), j.cancellation_requested_at = maybe_time();
    j.last_checkpoint_at = maybe_time();
    j.status_changed_at = now - 5, j.created_at = now - 1'000'000'007, j.updated_at = now - 3;
    j.latest_checkpoint_manifest_path = text(), j.latest_failure_artifact_path = text(), j.checkpoint_cycle_status = text();
    if (rng() % 2) j.progress = static_cast<double>(rng() % 1000) / 997.0;
    if (rng() % 2) j.segments.push_back({text(), now - static_cast<time_us>(rng() % 10'000'000'000), std::nullopt, true});
    if (rng() % 2) j.progress_codes = json::array({text(), 3, 0.25});
    if (rng() % 2) j.checkpoint_cycle_failures = json::array({{{"at", text()}, {"n", rng() % 9}}});
    j.assigned_worker_id = text(), j.failure_reason = text(), j.requeued_from = text();
    if (rng() % 3 == 0) j.requeued_to = {text(), text()};
    j.user = text(), j.account = text(), j.partition = text(), j.qos = text(), j.conformance = text();
    j.attempts = static_cast<uint32_t>(rng()), j.lost_workers = static_cast<uint32_t>(rng() % 5);
    j.max_attempts = static_cast<uint32_t>(rng() % 9), j.gpu_count = static_cast<uint32_t>(rng() % 9);
    j.nice = static_cast<int64_t>(rng() % 20001) - 10000;
    if (rng() % 2) j.time_limit_seconds = static_cast<int64_t>(rng() % 1'000'000);
    j.checkpoints = rng() % 2, j.requeue = rng() % 2, j.interactive = rng() % 2, j.held = rng() % 2;
    j.admin_hold = rng() % 2, j.pruned = rng() % 5 == 0;
    if (rng() % 2) j.checkpoint_seconds = static_cast<double>(rng() % 100000) / 8.0;
    j.preempted_by = text(), j.preempt_mode = text();
    if (rng() % 2) j.preempt_grace_until = now + 300'000'000;
    j.preemptions = static_cast<uint32_t>(rng() % 4);
    j.priority = static_cast<int64_t>(rng()) >> 1, j.priority_tier = static_cast<int>(rng() % 20) - 5;
    for (size_t n = rng() % 3; n > 0; --n)
      j.depends_on.push_back({text(), static_cast<baton::core::dependency_condition>(rng() % 3)});
    row.queue_blocked_reason = text(), row.pending_reason = text(), row.pending_detail = text();
    if (rng() % 2) row.reservation = baton::core::planned_slot{text(), now + 60'000'000, now + 3'600'000'000};
    if (rng() % 3 == 0) row.array = baton::core::array_task{text(), static_cast<uint32_t>(rng() % 10000)};

    baton::core::reply r;
    r.at = now;
    r.value = row;
    baton::http::response res;
    baton::http::to_response(r, res);
    ASSERT_EQ(res.status, 200);
    EXPECT_EQ(res.content_type, "application/json");
    const json expected = shape(row, now);
    ASSERT_EQ(json::parse(res.body), json::parse(expected.dump(-1, ' ', false, json::error_handler_t::replace))) << i;
    const auto keys = top_keys(res.body);
    EXPECT_EQ(keys.size(), expected.size()) << "every key once: " << res.body;
    EXPECT_EQ(baton::http::body_of(r.value, r.at), json::parse(res.body)) << "body_of reads the same back";
    page.items.push_back(std::move(row));
    if (page.items.size() == 50) {
      page.total = 1234, page.offset = 50 * pages, page.limit = 50;
      r.value = page;
      baton::http::to_response(r, res);
      json want = {{"items", json::array()}, {"total", page.total}, {"offset", page.offset}, {"limit", page.limit}};
      for (const auto& item : page.items) want["items"].push_back(shape(item, now));
      ASSERT_EQ(json::parse(res.body), json::parse(want.dump(-1, ' ', false, json::error_handler_t::replace)));
      page.items.clear();
      ++pages;
    }
  }
  EXPECT_EQ(pages, 40u);
}
