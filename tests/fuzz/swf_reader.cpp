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

#include "replay/swf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // read_swf takes a path (it hashes the file as stored): one scratch file per
  // process.
  static const std::string path = [] {
    std::string p = "/tmp/baton-swf-fuzz-" + std::to_string(::getpid()) + ".swf";
    std::atexit([] { std::remove(("/tmp/baton-swf-fuzz-" + std::to_string(::getpid()) + ".swf").c_str()); });
    return p;
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
  }
  try {
    baton::replay::read_swf(path);  // strict: the first malformed line throws
  } catch (const std::runtime_error &) {
  }
  try {
    auto t = baton::replay::read_swf(path, true);
    for (auto f : {baton::replay::swf_filter::sc15, baton::replay::swf_filter::batsim})
      for (int64_t capacity : {int64_t{0}, int64_t{1}, t.max_procs, int64_t{128}}) {
        auto jobs = baton::replay::filter_jobs(t, f, capacity);
        for (const auto &j : jobs)
          if (f == baton::replay::swf_filter::sc15 && (j.procs > capacity || j.run <= 0 || j.run > j.estimate))
            std::abort();  // SC'15's filter lets through only jobs the machine
                           // can hold, clipped
      }
  } catch (const std::runtime_error &) {
  }
  return 0;
}
