#pragma once
// Human output: aligned tables, short times, CSV for exports.
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace baton::cli {

struct column {
  std::string title;
  std::string key;  // field of each row object
};

void print_table(std::ostream& out, const nlohmann::json& rows, const std::vector<column>& columns);
// Strings as they are, numbers as JSON, null as "".
std::string cell(const nlohmann::json& v);
// RFC 4180: quotes around fields with a comma, quote or newline; quotes doubled.
std::string csv_field(const std::string& v);

}  // namespace baton::cli
