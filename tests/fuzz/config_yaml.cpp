// Fuzz target: the YAML config loader. Any text either loads or is refused with an error that
// names the file (or the environment variable) and says what was wrong; an exception escaping
// the loader would stop batond (and the CLI) with no such message.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto no_env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  auto r = baton::config::load_from_string(text, "fuzz.yaml", no_env);
  if (r.value.has_value() == r.error.has_value()) std::abort();  // exactly one of the two
  // An error names the file, or (for what the environment lacks) the variable.
  if (r.error && (r.error->message.empty() || (r.error->file != "fuzz.yaml" && r.error->key.empty()))) std::abort();
  if (r.error) (void)r.error->what();
  return 0;
}
