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
// o[key] read without the UB of a const operator[] on a missing key: null when o is not an
// object or has no such key. Replies come from the network; read them with this.
const nlohmann::json& field(const nlohmann::json& o, const std::string& key);
// A number of the reply as an int within [lo, hi] (clamped); fallback when it is not a number.
int bounded_int(const nlohmann::json& v, int lo, int hi, int fallback);
// Strings as they are, numbers as JSON, null as "".
std::string cell(const nlohmann::json& v);

}  // namespace baton::cli
