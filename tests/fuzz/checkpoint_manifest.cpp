// Fuzz target: a checkpoint manifest as a worker reads it from the shared
// filesystem before a restore. It is refused (std::runtime_error) or accepted;
// an accepted one names only paths inside the job's directories and survives a
// write and a re-read unchanged.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "worker/bundle.hpp"
#include "worker/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;  // restore says "is not JSON"
  baton::worker::manifest m;
  try {
    m = baton::worker::manifest_from_json(j);
  } catch (const std::runtime_error&) {
    return 0;
  }
  for (const auto& [name, e] : m.files)
    if (!baton::worker::is_safe_relative(name) || !baton::worker::is_safe_relative(e.object)) std::abort();
  auto again = baton::worker::manifest_from_json(
      nlohmann::json::parse(baton::worker::to_json(m).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  if (again.files.size() != m.files.size()) std::abort();
  return 0;
}
