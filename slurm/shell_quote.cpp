#include "slurm/shell_quote.hpp"

namespace baton::slurm {

std::string shell_quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'')
      out += "'\\''";  // close, escaped quote, reopen
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

}  // namespace baton::slurm
