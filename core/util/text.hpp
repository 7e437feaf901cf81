#pragma once
// Text as read from people and programs (request fields, nvidia-smi, scontrol).
#include <string>

namespace baton::util {

// s without the leading and trailing characters in `blanks`.
inline std::string trimmed(const std::string& s, const char* blanks = " \t\r\n") {
  auto start = s.find_first_not_of(blanks), end = s.find_last_not_of(blanks);
  return start == std::string::npos ? "" : s.substr(start, end - start + 1);
}

}  // namespace baton::util
