#pragma once
// Reading batond's /metrics text (Prometheus exposition format) in tests.
#include <sstream>
#include <string>

namespace baton::test {

// The value of one sample line ("name{labels} value"), or -1 when there is no such line.
inline long long metric_sample(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + series.size() + 2));
}

// The sum of every sample of `name` whose labels include `label` (such as command="squeue"),
// whatever its other labels; 0 when there is none.
inline long long metric_total(const std::string& text, const std::string& name, const std::string& label) {
  long long total = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name + "{", 0) == 0 && line.find(label) < line.find('}'))
      total += std::stoll(line.substr(line.rfind(' ') + 1));
  return total;
}

}  // namespace baton::test
