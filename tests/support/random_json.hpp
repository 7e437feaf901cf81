#pragma once
// A random JSON value of every kind the log's payloads hold, with the edges of each CBOR
// encoding among them (for the CBOR decoder's and encoder's tests).
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace baton::test {

inline nlohmann::json random_value(std::mt19937_64& rng, int depth) {
  using nlohmann::json;
  // clang-format off
  static const std::vector<json> edges = {
      0u, 23u, 24u, 255u, 256u, 65535u, 65536u, 4294967295u, 4294967296u, std::numeric_limits<uint64_t>::max(),
      -1, -24, -25, -256, -257, -65536, -65537, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
      0.5, 0.1, -0.0, 1e300, 3.4028234663852886e38, 1.401298464324817e-45, std::nan(""),
      std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), true, false, nullptr,
      "", std::string(23, 'a'), std::string(24, 'b'), std::string(255, 'c'), std::string(256, 'd'),
      std::string(65536, 'e'), "\xc3\xa9t\xc3\xa9"};
  // clang-format on
  int kind = static_cast<int>(rng() % (depth > 3 ? 3 : 5));
  switch (kind) {
    case 0:
      return edges[rng() % edges.size()];
    case 1:
      return static_cast<int64_t>(rng()) >> (rng() % 64);
    case 2: {
      double d;
      uint64_t bits = rng();
      std::memcpy(&d, &bits, sizeof d);
      return rng() % 2 ? json(d) : json(static_cast<double>(static_cast<float>(rng() % 100000) / 8));
    }
    case 3: {
      json a = json::array();
      for (size_t i = rng() % 8; i > 0; --i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (size_t i = rng() % 8; i > 0; --i) o["k" + std::to_string(rng() % 1000)] = random_value(rng, depth + 1);
      return o;
    }
  }
}

}  // namespace baton::test
