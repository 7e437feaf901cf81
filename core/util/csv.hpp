#pragma once
// CSV cells (RFC 4180) for the exports people open in spreadsheets: the audit export
// (replay/audit/audit_export.cpp) and `baton jobs export-csv`.
#include <string>
#include <string_view>

namespace baton::util {

// A cell a spreadsheet would run as a formula: =, +, -, @, a tab or CR first (OWASP's CSV
// injection list). A job title or a request id is a client's text.
inline bool csv_formula_leading(std::string_view v) {
  return !v.empty() && std::string_view("=+-@\t\r'").find(v[0]) != std::string_view::npos;
}

// The cell for v: a ' in front of a formula-leading text (and of one that begins with '
// itself, so that csv_text() takes exactly one off again), then quoted when it holds a comma,
// a quote or a line break.
inline std::string csv_field(const std::string& v) {
  const std::string text = csv_formula_leading(v) ? "'" + v : v;
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A cell's text as read back (unquoted), without the ' csv_field() put in front.
inline std::string csv_text(std::string cell) {
  if (cell.size() > 1 && cell[0] == '\'' && csv_formula_leading(std::string_view(cell).substr(1))) cell.erase(0, 1);
  return cell;
}

}  // namespace baton::util
