#include "cli/request_helpers.hpp"

#include <cstdio>

namespace baton::cli {

using nlohmann::json;

int guarded(context& c, const std::function<int()>& command) {
  try {
    return command();
  } catch (const json::exception& e) {
    c.err << "baton: batond's reply is not what this baton expects (" << e.what() << ")\n";
    return api_error;
  }
}

std::string encode(const std::string& v) {
  std::string out;
  for (unsigned char ch : v) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out += static_cast<char>(ch);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      out += buf;
    }
  }
  return out;
}

int run(context& c, const std::string& method, const std::string& path, result& r, const json& body) {
  r = call(c.daemon, method, path, body);
  if (r.code() != ok) c.err << "baton: " << r.message() << "\n";
  return r.code();
}

int print(context& c, const json& body, const std::vector<column>& columns) {
  if (c.json)
    c.out << body.dump(2) << "\n";
  else
    print_table(c.out, body.is_array() ? body : json::array({body}), columns);
  return ok;
}

int reply(context& c, const json& body, const std::function<void(std::ostream&)>& say) {
  if (c.json) return print(c, body, {});
  say(c.out);
  c.out << "\n";
  return ok;
}

std::ostream* output_to(context& c, const std::string& path, std::ofstream& file, std::ios::openmode mode) {
  if (path.empty() || path == "-") return &c.out;
  file.open(path, mode);
  if (file) return &file;
  c.err << "baton: cannot write " << path << "\n";
  return nullptr;
}

}  // namespace baton::cli
