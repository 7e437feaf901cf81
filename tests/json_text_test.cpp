// events/json_text: append_json_string and append_json write exactly what nlohmann's dump()
// writes, and fail where it fails (invalid UTF-8); is_utf8 and utf8_replaced agree with it.
#include "events/json_text.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "support/random_json.hpp"

using nlohmann::json;

namespace {

// The text, or the error's, of writing v one way and the other.
std::string dumped(const json& v) {
  try {
    return v.dump();
  } catch (const json::exception& e) {
    return std::string("error: ") + e.what();
  }
}
std::string ours(const json& v) {
  try {
    return baton::events::json_text(v);
  } catch (const json::exception& e) {
    return std::string("error: ") + e.what();
  }
}

const std::vector<std::string> texts = {"",
                                        "plain",
                                        "quote\" back\\slash",
                                        "tab\tnl\ncr\rbs\bff\f ctl\x01\x1f\x7f",
                                        "caf\xc3\xa9 \xe2\x9c\x93",
                                        "an escape \" before caf\xc3\xa9",
                                        "bad \xff\xfe utf-8",
                                        "cut \xc3",
                                        std::string(300, 'x') + "\n"};

}  // namespace

TEST(JsonText, ValuesAreWrittenAsDumpWritesThem) {
  std::mt19937_64 rng(20261128);
  for (int i = 0; i < 3000; ++i) {
    const json v = baton::test::random_value(rng, 0);
    ASSERT_EQ(ours(v), dumped(v)) << i;
  }
  for (const auto& t : texts) {
    EXPECT_EQ(ours(t), dumped(t)) << t;
    EXPECT_EQ(ours(json{{t, 1}, {"k", t}}), dumped(json{{t, 1}, {"k", t}})) << t;
    EXPECT_EQ(ours(json::array({t, t})), dumped(json::array({t, t}))) << t;
  }
  EXPECT_EQ(ours(json::binary({1, 2}, 7)), dumped(json::binary({1, 2}, 7)));
  EXPECT_EQ(ours(json{{"a", json::array()}, {"b", json::object()}}), R"({"a":[],"b":{}})");
  EXPECT_NE(ours(std::string("bad \xff")).find("error: [json.exception.type_error.316]"), std::string::npos);
}

TEST(JsonText, StringsAreWrittenAsDumpWritesThemEitherWayOfHandlingBadUtf8) {
  for (const auto& t : texts) {
    std::string replaced = "x";
    baton::events::append_json_string(replaced, t, baton::events::invalid_utf8::replace);
    EXPECT_EQ(replaced, "x" + json(t).dump(-1, ' ', false, json::error_handler_t::replace)) << t;
    std::string strict = "x";
    try {
      baton::events::append_json_string(strict, t);
      EXPECT_EQ(strict, "x" + json(t).dump()) << t;
    } catch (const json::type_error&) {
      EXPECT_THROW((void)json(t).dump(), json::type_error) << t;
    }
  }
}

// is_utf8 agrees with nlohmann's strict dump on every kind of sequence (overlong, surrogate,
// past U+10FFFF, cut short), and utf8_replaced gives dump(replace)'s text.
TEST(JsonText, Utf8IsCheckedAsDumpChecksItAndReplacedAsItReplaces) {
  const std::vector<std::string> texts = {
      "",         "plain",        "caf\xc3\xa9",  "\xe2\x82\xac",     "\xf0\x9f\x98\x80", "\xff",   "a\xc3",
      "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf0\x9f\x98",     "ok\x80", "\xc2\xa0tail"};
  for (const auto& t : texts) {
    bool strict_ok = true;
    try {
      (void)json(t).dump();
    } catch (const json::exception&) {
      strict_ok = false;
    }
    EXPECT_EQ(baton::events::is_utf8(t), strict_ok) << json(t).dump(-1, ' ', true, json::error_handler_t::replace);
    EXPECT_EQ(json(baton::events::utf8_replaced(t)).dump(), json(t).dump(-1, ' ', false, json::error_handler_t::replace));
  }
  EXPECT_EQ(baton::events::utf8_replaced("operator:\xff"), "operator:\xef\xbf\xbd");
}
