// Fuzz target: the SWF reader (plain or gzip) and the filters that turn records
// into the jobs a simulation runs, strict and lenient. A bad trace is refused
// with std::runtime_error; nothing else may happen.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "replay/sim/swf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // read_swf takes a path (it hashes the file as stored): one scratch file per
  // process.
  static const std::string path = [] {
    std::string p = "/tmp/baton-swf-fuzz-" + std::to_string(::getpid()) + ".swf";
    std::atexit([] { std::remove(("/tmp/baton-swf-fuzz-" + std::to_string(::getpid()) + ".swf").c_str()); });
    return p;
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    baton::replay::read_swf(path);  // strict: the first malformed line throws
  } catch (const std::runtime_error&) {
  }
  try {
    auto t = baton::replay::read_swf(path, true);
    for (auto f : {baton::replay::swf_filter::sc15, baton::replay::swf_filter::batsim})
      for (int64_t capacity : {int64_t{0}, int64_t{1}, t.max_procs, int64_t{128}}) {
        auto jobs = baton::replay::filter_jobs(t, f, capacity);
        for (const auto& j : jobs)
          if (f == baton::replay::swf_filter::sc15 && (j.procs > capacity || j.run <= 0 || j.run > j.estimate))
            std::abort();  // SC'15's filter lets through only jobs the machine
                           // can hold, clipped
      }
    // Filtering while reading is filtering the records read; inflating on a second
    // thread reads what inflating inline reads.
    for (auto f : {baton::replay::swf_filter::sc15, baton::replay::swf_filter::batsim})
      for (int64_t procs : {int64_t{0}, int64_t{1}, int64_t{128}}) {
        baton::replay::swf_trace read;
        auto jobs = baton::replay::read_swf_jobs(path, true, f, procs, read);
        auto want = baton::replay::filter_jobs(t, f, procs > 0 ? procs : t.max_procs);
        if (jobs.size() != want.size() || read.record_count != t.records.size()) std::abort();
        for (size_t i = 0; i < jobs.size(); ++i)
          if (jobs[i].id != want[i].id || jobs[i].procs != want[i].procs || jobs[i].run != want[i].run) std::abort();
      }
    auto threaded = baton::replay::read_swf(path, true, baton::replay::swf_inflate::threaded);
    if (threaded.records.size() != t.records.size() || threaded.lines != t.lines ||
        threaded.malformed_lines != t.malformed_lines || threaded.damaged != t.damaged)
      std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
