// events::encode_cbor against nlohmann::json::to_cbor: the same bytes for every value, at
// every edge of every encoding (the log's hashes cover those bytes).
#include "events/cbor_encode.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "events/payload.hpp"
#include "support/random_json.hpp"

using nlohmann::json;

namespace {

std::string nlohmann_bytes(const json& v) {
  auto b = json::to_cbor(v);
  return std::string(b.begin(), b.end());
}

void expect_same_bytes(const json& v, const std::string& what) {
  const std::string want = nlohmann_bytes(v), got = baton::events::encode_cbor(v);
  EXPECT_EQ(want, got) << what << ": " << v.dump().substr(0, 200);
}

}  // namespace

TEST(CborEncode, WritesWhatToCborWrites) {
  std::mt19937_64 rng(20261128);
  for (int i = 0; i < 3000; ++i) expect_same_bytes(baton::test::random_value(rng, 0), "value " + std::to_string(i));
}

TEST(CborEncode, EveryIntegerAndLengthEdge) {
  std::vector<json> values;
  for (uint64_t edge : {uint64_t{0}, uint64_t{0x17}, uint64_t{0xFF}, uint64_t{0xFFFF}, uint64_t{0xFFFFFFFF}}) {
    for (uint64_t n : {edge, edge + 1}) {
      values.push_back(n);
      values.push_back(static_cast<int64_t>(n));
      values.push_back(-static_cast<int64_t>(n));
      values.push_back(-1 - static_cast<int64_t>(n));
      if (n <= 70000) {
        values.push_back(std::string(n, 'x'));
        values.push_back(json::array());
        for (uint64_t i = 0; i < n; ++i) values.back().push_back(i % 3);
        json o = json::object();
        for (uint64_t i = 0; i < n; ++i) o["k" + std::to_string(i)] = nullptr;
        values.push_back(std::move(o));
        values.push_back(json::binary(std::vector<uint8_t>(n, 7)));
      }
    }
  }
  values.push_back(std::numeric_limits<uint64_t>::max());
  values.push_back(std::numeric_limits<int64_t>::min());
  values.push_back(std::numeric_limits<int64_t>::max());
  for (double d : {0.0, -0.0, 1.5, 0.1, 16777217.0, 3.4028234663852886e38, 3.4028235677973366e38, -3.4028234663852886e38, 1e-45,
                   1.401298464324817e-45, 5e-324, std::numeric_limits<double>::max()})
    values.push_back(d);
  for (uint64_t subtype : {uint64_t{0}, uint64_t{0xFF}, uint64_t{0x100}, uint64_t{0xFFFF}, uint64_t{0x10000},
                           uint64_t{0xFFFFFFFF}, uint64_t{0x100000000}})
    values.push_back(json::binary({1, 2, 3}, subtype));
  for (size_t i = 0; i < values.size(); ++i) expect_same_bytes(values[i], "edge " + std::to_string(i));
}

TEST(CborEncode, PayloadsAreWrittenByIt) {
  // The log's payload writer is this encoder, and what it writes reads back as the value.
  json p = {{"worker_id", "6f1c1d8e-2b7a-4c1e-9a51-3b2f0e7d9c11"},
            {"attempt", 1},
            {"decision", {{"policy", "greedy-rank-v1"}, {"worker_score", 123456}, {"stale_excluded", json::array()}}},
            {"progress", 0.25}};
  EXPECT_EQ(baton::events::to_payload(p), nlohmann_bytes(p));
  EXPECT_EQ(baton::events::from_payload(baton::events::to_payload(p)), p);
  std::string out = "prefix";
  baton::events::encode_cbor(json(5), out);
  EXPECT_EQ(out, std::string("prefix\x05"));  // appends
}
