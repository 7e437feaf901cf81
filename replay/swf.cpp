#include "replay/swf.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "events/bytes.hpp"
#include "events/sha256.hpp"

namespace baton::replay {

namespace {

// The whole file, decompressed when it is gzip (zlib reads plain files as they are).
std::string inflate_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const char* what = n < 0 ? gzerror(f, &err) : nullptr;
  std::string message = what ? what : "";
  gzclose(f);
  if (n < 0) throw std::runtime_error("cannot read " + path + ": " + message);
  return out;
}

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return events::to_hex(events::sha256(bytes));
}

// "; MaxProcs: 100" (any spacing).
bool header_value(const std::string& line, const char* key, int64_t& out) {
  auto at = line.find(key);
  if (at == std::string::npos) return false;
  auto colon = line.find(':', at);
  if (colon == std::string::npos) return false;
  out = std::strtoll(line.c_str() + colon + 1, nullptr, 10);
  return true;
}

}  // namespace

swf_trace read_swf(const std::string& path) {
  swf_trace t;
  std::string text = inflate_file(path);
  t.sha256 = file_sha256(path);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    if (line[first] == ';') {
      header_value(line, "MaxProcs", t.max_procs);
      continue;
    }
    int64_t f[18];
    const char* p = line.c_str() + first;
    int n = 0;
    for (; n < 18; ++n) {
      char* end = nullptr;
      double v = std::strtod(p, &end);  // some archives write 1.0 for integers
      if (end == p || !(std::fabs(v) < 9e18)) break;  // not a number, or none an int64 holds (inf, nan, 1e300)
      f[n] = static_cast<int64_t>(v);
      p = end;
    }
    if (n < 18) {
      ++t.malformed_lines;
      continue;
    }
    swf_record r;
    r.job = f[0];
    r.submit = f[1];
    r.wait = f[2];
    r.run = f[3];
    r.allocated_procs = f[4];
    r.requested_procs = f[7];
    r.requested_time = f[8];
    r.status = f[10];
    r.user = f[11];
    r.group = f[12];
    r.queue = f[14];
    r.partition = f[15];
    t.records.push_back(r);
  }
  if (t.records.empty()) throw std::runtime_error(path + " holds no SWF record");
  return t;
}

const char* to_string(swf_filter f) { return f == swf_filter::sc15 ? "sc15" : "batsim"; }

bool swf_filter_from(const std::string& name, swf_filter& out) {
  if (name == "sc15") return out = swf_filter::sc15, true;
  if (name == "batsim") return out = swf_filter::batsim, true;
  return false;
}

std::string describe(swf_filter f) {
  if (f == swf_filter::sc15)
    return "sc15: allocated and requested processors <= capacity (a missing one taken from the other), run > 0, "
           "requested time > 0, submit >= 0; run clipped to the requested time; a job uses its allocated processors";
  return "batsim: rows with -1 in submit, wait, run or allocated processors dropped, every status kept; a job uses "
         "its requested processors (allocated when -1); run clipped to the requested time";
}

std::vector<sim_job> filter_jobs(const swf_trace& t, swf_filter f, int64_t capacity) {
  std::vector<sim_job> out;
  out.reserve(t.records.size());
  for (const auto& r : t.records) {
    sim_job j;
    j.id = r.job;
    j.submit = r.submit;
    j.user = r.user;
    j.group = r.group;
    if (f == swf_filter::sc15) {
      int64_t alloc = r.allocated_procs > 0 ? r.allocated_procs : r.requested_procs;
      int64_t req = r.requested_procs > 0 ? r.requested_procs : r.allocated_procs;
      if (alloc <= 0 || alloc > capacity || req > capacity) continue;
      if (r.run <= 0 || r.requested_time <= 0 || r.submit < 0) continue;
      j.procs = alloc;
      j.estimate = r.requested_time;
      j.run = std::min(r.run, r.requested_time);
    } else {
      if (r.submit < 0 || r.wait < 0 || r.run < 0 || r.allocated_procs < 0) continue;
      j.procs = r.requested_procs > 0 ? r.requested_procs : r.allocated_procs;
      j.estimate = r.requested_time > 0 ? r.requested_time : r.run;
      j.run = std::min(r.run, j.estimate);
    }
    out.push_back(j);
  }
  return out;
}

}  // namespace baton::replay
