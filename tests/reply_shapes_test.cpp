// http::to_response writes a poll's answer by hand: it must be the body body_of() builds, as
// reply_json dumps it (nlohmann's key order, escapes, invalid UTF-8 replaced), byte for byte.
#include "http/reply_shapes.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "http/message.hpp"

using nlohmann::json;
namespace R = baton::core::results;

namespace {

std::string dumped(const baton::core::reply& r) {
  return baton::http::body_of(r.value, r.at).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

TEST(ReplyShapes, APollsAnswerIsWrittenAsTheJsonItsShapeDumps) {
  const std::vector<std::string> texts = {"",
                                          "6f1c1d8e-2b7a-4c1e-9a51-3b2f0e7d9c11",
                                          "/bundles/quote\" back\\slash",
                                          "tab\tnl\ncr\rbs\bff\f ctl\x01\x1f\x7f",
                                          "caf\xc3\xa9 \xe2\x9c\x93",
                                          "an escape \" before caf\xc3\xa9",
                                          "bad \xff\xfe utf-8 \xc3"};
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
