// Fuzz target: replay::read_job_payload (a job event's payload read from its CBOR bytes
// without the JSON tree) against the ordinary reading (decode, then core::read_job_change).
// The first byte picks the event type; wherever the fast reading answers, the ordinary one
// must succeed with the same change and the same decision record.
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>

#include "tests/support/job_change_same.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const types[] = {"job.created", "job.assigned", "job.started", "job.checkpointed",
                                      "job.progress_reported", "job.handoff_completed", "job.completed", "job.failed"};
  if (size == 0) return 0;
  const std::string type = types[data[0] % (sizeof types / sizeof *types)];
  std::string_view bytes(reinterpret_cast<const char *>(data + 1), size - 1);
  if (auto difference = baton::test::fast_reading_difference(type, bytes); !difference.empty()) {
    std::fprintf(stderr, "%s: %s\n", type.c_str(), difference.c_str());
    std::abort();
  }
  return 0;
}
