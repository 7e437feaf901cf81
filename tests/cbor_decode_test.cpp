// events::decode_cbor against nlohmann::json::from_cbor: the same value with the same number
// types for everything to_cbor writes, the same value or the same error for everything else
// (odd encodings, every truncation, bogus counts).
#include "events/cbor_decode.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/cbor_outcome.hpp"
#include "support/random_json.hpp"

using baton::test::nlohmann_cbor;
using baton::test::our_cbor;
using baton::test::random_value;
using baton::test::same_json;
using nlohmann::json;

namespace {

std::string bytes_of(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

void expect_same_outcome(const std::string& in, const std::string& what) {
  auto want = nlohmann_cbor(in), got = our_cbor(in);
  ASSERT_EQ(want.ok, got.ok) << what << ": nlohmann " << (want.ok ? "decoded" : want.error) << ", ours "
                             << (got.ok ? "decoded" : got.error);
  if (want.ok)
    EXPECT_TRUE(same_json(want.value, got.value)) << what << ": nlohmann " << want.value.dump() << ", ours " << got.value.dump();
  else
    EXPECT_EQ(want.error, got.error) << what;
}

}  // namespace

TEST(CborDecode, ReadsWhatToCborWritesAsNlohmannDoes) {
  std::mt19937_64 rng(20261127);
  for (int i = 0; i < 3000; ++i) {
    json v = random_value(rng, 0);
    auto b = json::to_cbor(v);
    std::string in(b.begin(), b.end());
    expect_same_outcome(in, "value " + std::to_string(i));
  }
}

TEST(CborDecode, ReadsAnAssignmentPayloadWithoutFallingBack) {
  json p = {{"worker_id", "6f1c1d8e-2b7a-4c1e-9a51-3b2f0e7d9c11"},
            {"attempt", 1},
            {"decision", {{"policy", "greedy-rank-v1"}, {"worker_score", 123456}, {"stale_excluded", json::array()}}},
            {"progress", 0.25},
            {"ratio", 0.1},
            {"offset", -3}};
  auto b = json::to_cbor(p);
  json out;
  ASSERT_TRUE(baton::events::decode_common_cbor(std::string(b.begin(), b.end()), out));
  EXPECT_TRUE(same_json(out, json::from_cbor(b)));
  EXPECT_TRUE(out["attempt"].is_number_unsigned());
  EXPECT_TRUE(out["offset"].is_number_integer());
}

TEST(CborDecode, EveryTruncationFailsWithNlohmannsError) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) {
    auto b = json::to_cbor(random_value(rng, 2));
    std::string in(b.begin(), b.end());
    for (size_t n = 0; n < in.size() && n < 400; ++n) expect_same_outcome(in.substr(0, n), "prefix " + std::to_string(n));
    expect_same_outcome(in + '\x00', "a trailing byte");
  }
}

TEST(CborDecode, OtherEncodingsGiveNlohmannsValueOrError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"map with unsorted keys", bytes_of({0xA2, 0x61, 'b', 0x01, 0x61, 'a', 0x02})},
      {"map with a repeated key", bytes_of({0xA2, 0x61, 'a', 0x01, 0x61, 'a', 0x02})},
      {"map with an integer key", bytes_of({0xA1, 0x01, 0x02})},
      {"indefinite array", bytes_of({0x9F, 0x01, 0x02, 0xFF})},
      {"indefinite map", bytes_of({0xBF, 0x61, 'a', 0x01, 0xFF})},
      {"indefinite text", bytes_of({0x7F, 0x61, 'a', 0x61, 'b', 0xFF})},
      {"half float", bytes_of({0xF9, 0x3C, 0x00})},
      {"undefined", bytes_of({0xF7})},
      {"simple value 16", bytes_of({0xF0})},
      {"byte string", bytes_of({0x42, 0x01, 0x02})},
      {"tag", bytes_of({0xC1, 0x1A, 0x00, 0x00, 0x00, 0x01})},
      {"reserved additional info", bytes_of({0x1C})},
      {"negative beyond int64", bytes_of({0x3B, 0x80, 0, 0, 0, 0, 0, 0, 0})},
      {"array counting more elements than bytes", bytes_of({0x9B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})},
      {"map counting more pairs than bytes", bytes_of({0xBA, 0xFF, 0xFF, 0xFF, 0xFF, 0x61, 'a'})},
      {"text longer than the input", bytes_of({0x7A, 0x00, 0x01, 0x00, 0x00, 'x'})},
      {"non-minimal integer", bytes_of({0x1B, 0, 0, 0, 0, 0, 0, 0, 0x05})},
      {"empty input", std::string()},
  };
  for (const auto& [what, in] : cases) expect_same_outcome(in, what);
  std::string deep(400, '\x81');  // arrays nested 400 deep: within the limit
  deep.push_back('\x00');
  expect_same_outcome(deep, "deep nesting");
  std::string half_float_then_deep = "\x82\xF9\x3C\x00" + std::string(400, '\x81') + '\x00';  // handed to nlohmann at once
  expect_same_outcome(half_float_then_deep, "a half float, then deep nesting");
}

TEST(CborDecode, NestingPastTheLimitIsRefusedWithoutRecursingOnIt) {
  // nlohmann's decoder recurses once per level: a few hundred kilobytes of nested arrays (or
  // indefinite ones, or tags) would exhaust the stack. Refused with a parse error instead,
  // however the bytes begin.
  for (const auto& [what, in] : std::vector<std::pair<std::string, std::string>>{
           {"definite arrays", std::string(300'000, '\x81') + '\x00'},
           {"indefinite arrays", std::string(300'000, '\x9F')},
           {"maps",
            [] {
              std::string s;
              for (int i = 0; i < 100'000; ++i) s += "\xA1\x61k";
              return s + '\x00';
            }()},
           {"tags", std::string(300'000, '\xC1') + '\x00'},
           {"after a half float", "\x82\xF9\x3C\x00" + std::string(300'000, '\x81') + '\x00'},
       }) {
    try {
      baton::events::decode_cbor(in);
      ADD_FAILURE() << what << ": decoded";
    } catch (const json::parse_error& e) {
      EXPECT_NE(std::string(e.what()).find("nested deeper than 512 levels"), std::string::npos) << what << ": " << e.what();
    }
    EXPECT_TRUE(baton::events::cbor_nests_deeper_than(in, baton::events::max_cbor_nesting)) << what;
  }
  EXPECT_FALSE(baton::events::cbor_nests_deeper_than(std::string(512, '\x81') + '\x00', 512));
  EXPECT_TRUE(baton::events::cbor_nests_deeper_than(std::string(513, '\x81') + '\x00', 512));
  EXPECT_FALSE(baton::events::cbor_nests_deeper_than(bytes_of({0x83, 0x81, 0x81, 0x00, 0x81, 0x00, 0x00}), 3))
      << "siblings are not deeper";
  EXPECT_TRUE(baton::events::cbor_nests_deeper_than(bytes_of({0x83, 0x81, 0x81, 0x00, 0x81, 0x81, 0x81, 0x00, 0x00}), 3));
}
