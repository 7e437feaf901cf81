#pragma once
// Text as the worker reads it from the programs it asks (nvidia-smi, scontrol).
#include <string>

namespace baton::worker {

// s without its leading and trailing spaces, tabs and line ends.
inline std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace baton::worker
