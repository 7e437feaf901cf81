#pragma once
// POSIX shell quoting: the result is one word whose value is exactly the input, whatever it
// holds ($, backticks, quotes, ;, newlines). Every value injected into a script goes through it.
#include <string>
#include <vector>

namespace baton::slurm {

std::string shell_quote(const std::string& value);
// argv joined into one shell command line, every word quoted (what ssh passes to the remote shell).
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace baton::slurm
