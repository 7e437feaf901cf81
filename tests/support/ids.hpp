#pragma once
// Job and worker ids must be UUIDs; tests name their jobs ("job-1") and turn the names into
// stable UUIDs with uid(), so the same name is the same id throughout a test.
#include <cstdint>
#include <cstdio>
#include <regex>
#include <string>

namespace baton::test {

inline std::string uid(const std::string& name) {
  auto fnv = [&](uint64_t h) {
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
    return h;
  };
  uint64_t a = fnv(14695981039346656037ULL), b = fnv(a ^ 0x9e3779b97f4a7c15ULL);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-8%03x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>((b >> 48) & 0xfff), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

// "/jobs/<name>/..." with the name turned into uid(name) (UUIDs and "request" are kept).
inline std::string uid_path(const std::string& path) {
  static const std::regex job_path(R"(^/jobs/([^/?]+))");
  static const std::regex uuid(R"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})");
  std::smatch m;
  if (!std::regex_search(path, m, job_path)) return path;
  std::string name = m[1].str();
  if (name == "request" || std::regex_match(name, uuid)) return path;
  return "/jobs/" + uid(name) + path.substr(m[0].length());
}

}  // namespace baton::test
