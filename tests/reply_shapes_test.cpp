// http::to_response writes a poll's answer by hand: it must be the poll's JSON shape as
// nlohmann dumps it (its key order, escapes, invalid UTF-8 replaced), byte for byte; and
// body_of() must read the same back.
#include "http/reply_shapes.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/storage/storage.hpp"
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
