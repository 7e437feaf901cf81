#pragma once
// `baton-replay rederive --json` on a test's data dir: the report as JSON, or
// {"error": what the tool said} when it did not answer with one.
#include <nlohmann/json.hpp>
#include <string>

#include "support/process.hpp"

namespace baton::test {

inline nlohmann::json rederive_report(const std::string& data_dir, const std::string& output_prefix) {
  child_process tool({BATON_REPLAY_PATH, "rederive", "--data-dir", data_dir, "--json"}, output_prefix);
  if (tool.wait(std::chrono::seconds(120)) == -1) return {{"error", "baton-replay rederive did not finish"}};
  auto report = nlohmann::json::parse(tool.out(), nullptr, false);
  if (report.is_discarded()) return {{"error", tool.out() + tool.err()}};
  return report;
}

}  // namespace baton::test
