#pragma once
// baton-replay run by the tests: any subcommand (replay_tool), and `rederive --json` on a
// test's data dir (rederive_report: the report as JSON, or {"error": what the tool said}).
#include <nlohmann/json.hpp>
#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

#include <vector>

namespace baton::test {

inline tool_result replay_tool(const temp_dir& dir, std::vector<std::string> args) {
  static int n = 0;
  args.insert(args.begin(), BATON_REPLAY_PATH);
  child_process p(args, dir / ("replay-" + std::to_string(++n)), {});
  int code = exit_code(p.wait());
  return {code, p.out(), p.err()};
}

inline nlohmann::json rederive_report(const std::string& data_dir, const std::string& output_prefix) {
  child_process tool({BATON_REPLAY_PATH, "rederive", "--data-dir", data_dir, "--json"}, output_prefix);
  if (tool.wait(std::chrono::seconds(120)) == -1) return {{"error", "baton-replay rederive did not finish"}};
  auto report = nlohmann::json::parse(tool.out(), nullptr, false);
  if (report.is_discarded()) return {{"error", tool.out() + tool.err()}};
  return report;
}

}  // namespace baton::test
