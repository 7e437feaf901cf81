#pragma once
#include <optional>
#include <string>

namespace baton::worker {

// Parses a progress file's text: one number, clamped to [0, 1]. nullopt if it is not a number.
std::optional<double> parse_progress(const std::string& text);

// Reads and parses the file; nullopt if it is missing, empty or not a number.
std::optional<double> read_progress(const std::string& path);

}  // namespace baton::worker
