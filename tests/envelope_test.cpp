#include "events/envelope.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/util/hex.hpp"
#include "core/util/sha256.hpp"
#include "events/bytes.hpp"
#include "events/payload.hpp"

using namespace baton::events;
using baton::util::sha256;
using baton::util::to_hex;

namespace {

event_envelope sample() {
  event_envelope e;
  e.seq = 1234567890123ULL;
  e.stream_id = "job/550e8400-e29b-41d4-a716-446655440000";
  e.stream_version = 77;
  e.type = "job.checkpoint_reported";
  e.schema_version = 3;
  e.recorded_at_us = 1'763'800'000'123'456;
  e.correlation_id = "req-42";
  e.causation_id = "cmd-41";
  e.actor = "worker:abc";
  e.command_id = "cmd-42";
  e.payload = to_payload({{"manifest", "/ckpt/7.json"}, {"files", 3}});
  e.hash = chain_hash(std::string(32, 'p'), encode_body(e));
  return e;
}

}  // namespace

TEST(Envelope, RoundTripsEveryField) {
  auto e = sample();
  auto stored = encode(e);
  auto v = decode(stored);
  ASSERT_TRUE(v);
  auto d = v->to_envelope();
  EXPECT_EQ(d.seq, e.seq);
  EXPECT_EQ(d.stream_id, e.stream_id);
  EXPECT_EQ(d.stream_version, e.stream_version);
  EXPECT_EQ(d.type, e.type);
  EXPECT_EQ(d.schema_version, e.schema_version);
  EXPECT_EQ(d.recorded_at_us, e.recorded_at_us);
  EXPECT_EQ(d.correlation_id, e.correlation_id);
  EXPECT_EQ(d.causation_id, e.causation_id);
  EXPECT_EQ(d.actor, e.actor);
  EXPECT_EQ(d.command_id, e.command_id);
  EXPECT_EQ(d.payload, e.payload);
  EXPECT_EQ(d.hash, e.hash);
  EXPECT_EQ(from_payload(d.payload)["files"], 3);
}

TEST(Envelope, RoundTripsExtremesAndEmptyFields) {
  event_envelope e;
  e.seq = UINT64_MAX;
  e.stream_version = UINT64_MAX;
  e.schema_version = UINT32_MAX;
  e.recorded_at_us = INT64_MIN;
  e.stream_id = std::string("a\xff\x01", 3);
  e.type = "t";
  e.hash = std::string(32, '\0');
  auto stored = encode(e);  // the view points into this buffer
  auto v = decode(stored);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->seq, UINT64_MAX);
  EXPECT_EQ(v->stream_version, UINT64_MAX);
  EXPECT_EQ(v->schema_version, UINT32_MAX);
  EXPECT_EQ(v->recorded_at_us, INT64_MIN);
  EXPECT_EQ(v->stream_id, e.stream_id);
  EXPECT_TRUE(v->payload.empty());
  EXPECT_TRUE(v->command_id.empty());
}

TEST(Envelope, RejectsTruncatedAndForeignBytes) {
  auto stored = encode(sample());
  for (size_t n = 0; n < stored.size(); ++n) EXPECT_FALSE(decode(stored.substr(0, n))) << "length " << n;
  auto wrong_format = stored;
  wrong_format[0] = 9;
  EXPECT_FALSE(decode(wrong_format));
  EXPECT_FALSE(decode(std::string(100, '\xff')));
}

// Found by the event_decode fuzzer: a varint with a redundant continuation byte ("b7 00" for
// 55) decoded, so two byte strings stood for one event. Only the shortest encoding is read.
TEST(Envelope, VarintsHaveOneEncoding) {
  auto read = [](const std::string& bytes) -> std::optional<uint64_t> {
    size_t pos = 0;
    uint64_t v = 0;
    if (!get_varint(bytes, pos, v) || pos != bytes.size()) return std::nullopt;
    return v;
  };
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{300}, UINT64_MAX}) {
    std::string out;
    put_varint(out, v);
    EXPECT_EQ(read(out), v);
  }
  EXPECT_EQ(read("\x37"), 55u);
  EXPECT_FALSE(read(std::string("\xb7\x00", 2))) << "55 with a redundant zero byte";
  EXPECT_FALSE(read(std::string("\x80\x80\x00", 3)));
  EXPECT_FALSE(read(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10))) << "65 bits";
  EXPECT_FALSE(read(std::string(11, '\xff')));
  // And so an event whose seq is written the long way does not decode.
  event_envelope e;
  e.seq = 55;
  e.stream_id = "daemon";
  e.type = "daemon.started";
  e.hash = std::string(32, 'h');
  auto stored = encode(e);
  ASSERT_TRUE(decode(stored));
  ASSERT_EQ(stored[1], '\x37');
  std::string long_way = stored.substr(0, 1) + std::string("\xb7\x00", 2) + stored.substr(2);
  EXPECT_FALSE(decode(long_way));
}

TEST(Envelope, HashCoversEveryBodyByte) {
  auto e = sample();
  auto body = encode_body(e);
  auto h = chain_hash("prev", body);
  for (size_t i = 0; i < body.size(); ++i) {
    auto changed = body;
    changed[i] ^= 0x01;
    EXPECT_NE(chain_hash("prev", changed), h) << "byte " << i;
  }
  EXPECT_NE(chain_hash("other", body), h);
}

// The chain's hash is SHA-256 of the previous hash followed by the body: FIPS 180-4's
// examples, and any split of a message between the two parts hashes as the whole does
// (splits on and around the 64-byte block edges included).
TEST(Envelope, ChainHashIsSha256OfPreviousThenBody) {
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(to_hex(sha256(two_blocks)), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string message;
  for (int i = 0; i < 200; ++i) message.push_back(static_cast<char>(i * 37 + 11));
  for (size_t length : {0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 200}) {
    const std::string whole = message.substr(0, length);
    const std::string expected = sha256(whole);
    for (size_t split = 0; split <= length; ++split)
      EXPECT_EQ(sha256(whole.substr(0, split), whole.substr(split)), expected) << length << " split at " << split;
    if (length >= 32) {
      EXPECT_EQ(chain_hash(whole.substr(0, 32), whole.substr(32)), expected);
      EXPECT_TRUE(chain_hash_matches(whole.substr(0, 32), whole.substr(32), expected));
    }
  }
}

TEST(Envelope, JsonRenderingIsReadable) {
  auto j = to_json(sample());
  EXPECT_EQ(j["type"], "job.checkpoint_reported");
  EXPECT_EQ(j["recorded_at"], "2025-11-22T08:26:40.123456Z");
  EXPECT_EQ(j["payload"]["manifest"], "/ckpt/7.json");
  EXPECT_EQ(j["hash"].get<std::string>().size(), 64u);
  auto e = sample();
  e.payload = "\xff\xfe not cbor";
  EXPECT_TRUE(to_json(e)["payload"].contains("undecodable_payload_hex"));
}
