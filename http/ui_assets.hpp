#pragma once
// The web dashboard's static files (http/ui/), compiled into batond by
// cmake/embed_files.cmake: served at /ui/<name> by http/ui_routes.cpp.
#include <string_view>
#include <vector>

namespace baton::http {

struct ui_file {
  std::string_view name;  // e.g. "app.js"
  std::string_view body;
};
const std::vector<ui_file>& ui_files();

// The Content-Type for a file name by its extension ("application/octet-stream" otherwise).
std::string_view ui_content_type(std::string_view name);

}  // namespace baton::http
