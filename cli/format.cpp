#include "cli/format.hpp"

#include <algorithm>

namespace baton::cli {

const nlohmann::json& field(const nlohmann::json& o, const std::string& key) {
  static const nlohmann::json none;
  if (!o.is_object()) return none;
  auto it = o.find(key);
  return it == o.end() ? none : *it;
}

int bounded_int(const nlohmann::json& v, int lo, int hi, int fallback) {
  if (!v.is_number()) return fallback;
  double d = v.get<double>();
  if (!(d >= lo)) return lo;  // NaN too
  if (d > hi) return hi;
  return static_cast<int>(d);
}

std::string cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v.get<double>());
    return buf;
  }
  return v.dump();
}

void print_table(std::ostream& out, const nlohmann::json& rows, const std::vector<column>& columns) {
  std::vector<size_t> width;
  for (const auto& c : columns) width.push_back(c.title.size());
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    std::vector<std::string> line;
    for (size_t i = 0; i < columns.size(); ++i) {
      line.push_back(cell(r.contains(columns[i].key) ? r[columns[i].key] : nullptr));
      width[i] = std::max(width[i], line.back().size());
    }
    cells.push_back(std::move(line));
  }
  auto print_line = [&](const std::vector<std::string>& line) {
    for (size_t i = 0; i < line.size(); ++i) {
      out << line[i];
      if (i + 1 < line.size()) out << std::string(width[i] - line[i].size() + 2, ' ');
    }
    out << "\n";
  };
  std::vector<std::string> titles;
  for (const auto& c : columns) titles.push_back(c.title);
  print_line(titles);
  for (const auto& line : cells) print_line(line);
}

}  // namespace baton::cli
