// events/json_text: append_json_string and append_json write exactly what nlohmann's dump()
// writes, and fail where it fails (invalid UTF-8); is_utf8 and utf8_replaced agree with it.
#include "events/json_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
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

namespace {

// The text of a payload's bytes one way and the other: straight from the CBOR, and through the
// value (what the SQL view wrote before). "declined" when the straight way declines.
std::string from_cbor(const std::string& cbor, baton::events::invalid_utf8 bad = baton::events::invalid_utf8::refuse) {
  std::string out = "kept:";
  try {
    if (!baton::events::append_json_of_cbor(out, cbor, bad)) return out == "kept:" ? "declined" : "declined, but wrote";
    return out.substr(5);
  } catch (const json::exception& e) {
    return out == "kept:" ? std::string("error: ") + e.what() : "threw, but wrote";
  }
}
bool holds_non_finite(const json& v) {
  if (v.is_number_float()) return !std::isfinite(v.get<double>());
  if (v.is_structured())
    for (const auto& e : v)
      if (holds_non_finite(e)) return true;
  return false;
}
std::string through_value(const std::string& cbor, baton::events::invalid_utf8 bad = baton::events::invalid_utf8::refuse) {
  try {
    std::string out;
    baton::events::append_json(out, json::from_cbor(cbor), bad);
    return out;
  } catch (const json::exception& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

TEST(JsonText, PayloadBytesAreWrittenAsTheirValueWouldBe) {
  using baton::events::invalid_utf8;
  std::mt19937_64 rng(20261206);
  int declined = 0;
  for (int i = 0; i < 3000; ++i) {
    const json v = baton::test::random_value(rng, 0);
    const auto cbor = json::to_cbor(v);
    const std::string bytes(cbor.begin(), cbor.end());
    const auto got = from_cbor(bytes);
    if (got == "declined") {  // only what the encoder writes as a half float (NaN, infinities): the value's way
      ASSERT_TRUE(holds_non_finite(v)) << v.dump();
      ++declined;
      continue;
    }
    ASSERT_EQ(got, through_value(bytes)) << i;
    ASSERT_EQ(from_cbor(bytes, invalid_utf8::replace), through_value(bytes, invalid_utf8::replace)) << i;
  }
  EXPECT_LT(declined, 1500) << "the straight way writes most values";
  for (const auto& t : texts) {
    for (const json& v : {json(t), json{{t, 1}, {"k", t}}, json::array({t, 1.5, -3, nullptr, true})}) {
      const auto cbor = json::to_cbor(v);
      const std::string bytes(cbor.begin(), cbor.end());
      EXPECT_EQ(from_cbor(bytes), through_value(bytes)) << t;
      EXPECT_EQ(from_cbor(bytes, invalid_utf8::replace), through_value(bytes, invalid_utf8::replace)) << t;
    }
  }
  // Floats in each width the encoder writes, and a few the value reads differently.
  for (double d : {0.5, 0.1, -0.0, 1e300, 3.4028234663852886e38, 1.401298464324817e-45, 123456789.125, -2.5e-8}) {
    const json v = {{"x", d}};
    const auto cbor = json::to_cbor(v);
    EXPECT_EQ(from_cbor(std::string(cbor.begin(), cbor.end())), v.dump()) << d;
  }
}

TEST(JsonText, PayloadBytesOutsideTheEncodersFormsAreLeftToTheValue) {
  const std::vector<std::pair<const char*, std::string>> declined = {
      {"keys out of order", std::string("\xa2\x61"
                                        "b\x01\x61"
                                        "a\x02",
                                        7)},
      {"a repeated key", std::string("\xa2\x61"
                                     "a\x01\x61"
                                     "a\x02",
                                     7)},
      {"a tag", std::string("\xc1\x01", 2)},
      {"a byte string", std::string("\x42\x01\x02", 3)},
      {"an indefinite array", std::string("\x9f\x01\xff", 3)},
      {"a half float", std::string("\xf9\x3c\x00", 3)},
      {"undefined", std::string("\xf7", 1)},
      {"bytes left over", std::string("\x01\x02", 2)},
      {"cut short", std::string("\x82\x01", 2)},
      {"a negative integer beyond int64", std::string("\x3b\xff\xff\xff\xff\xff\xff\xff\xff", 9)},
      {"nothing", std::string()},
  };
  for (const auto& [what, bytes] : declined) EXPECT_EQ(from_cbor(bytes), "declined") << what;
  std::string deep;
  for (int i = 0; i < 600; ++i) deep += '\x81';
  deep += '\x01';
  EXPECT_EQ(from_cbor(deep), "declined") << "nesting beyond the cursor's bound";
}
