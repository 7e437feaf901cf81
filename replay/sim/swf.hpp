#pragma once
// The Standard Workload Format (SWF v2.2, the Parallel Workloads Archive's): one job a line,
// 18 whitespace-separated fields, -1 for unknown, header lines starting with ';' (MaxProcs
// among them). Read plain or gzip-compressed. The filters turn records into the jobs a
// simulation runs, each as a published result states it (docs/replay.md).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace baton::replay {

struct swf_record {
  int64_t job = -1, submit = -1, wait = -1, run = -1, allocated_procs = -1;
  int64_t requested_procs = -1, requested_time = -1, status = -1, user = -1, group = -1, queue = -1, partition = -1;
};

// A line the reader refused: its number (from 1) and why.
struct swf_bad_line {
  size_t line = 0;
  std::string why;
};

struct swf_trace {
  std::vector<swf_record> records;
  int64_t max_procs = 0;    // the header's MaxProcs (0 when absent)
  std::string sha256;       // of the file's bytes as stored (compressed or not)
  size_t lines = 0;         // lines read (headers and blank ones included)
  size_t record_count = 0;  // records read (read_swf_jobs keeps none of them in `records`)
  // Lenient reading only: how many record lines were refused, and the first few of them.
  size_t malformed_lines = 0;
  std::vector<swf_bad_line> first_malformed;
  std::string damaged;  // lenient only: why the gzip stream ended early ("" when it is whole)
};

// The file's content is not a trace: a record line that is not 18 numbers as SWF writes them,
// or a gzip stream that is truncated or fails its check. The message names the file and line.
class swf_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How many refused lines a lenient read lists (the count covers all of them).
constexpr size_t swf_bad_lines_listed = 5;

// A record line is 18 fields, each an integer or a decimal ("57.00": SWF's average CPU time;
// the fraction is dropped), -1 or not negative, whose integer part an int64 holds: anything
// else (too few or too many fields, letters, nan, inf, exponents, 1e30, -5) is malformed.
// Strict (the default): the first malformed line, or a gzip stream that ends early or fails
// its check, throws swf_error naming the file and the line. Lenient: such lines are left out
// and counted (the first swf_bad_lines_listed kept with their reason), and a damaged stream
// is read as far as it goes (`damaged` says why). Throws std::runtime_error naming the file
// when it cannot be read or holds no record at all.
//
// A .gz large enough to gain from it is inflated on a second thread while this one parses
// (automatic); `how` can ask for either way, which read the same (tests compare them).
enum class swf_inflate { automatic, inline_only, threaded };
swf_trace read_swf(const std::string& path, bool lenient = false, swf_inflate how = swf_inflate::automatic);

// A job as the simulator runs it. Times in seconds, as SWF gives them.
struct sim_job {
  int64_t id = 0;
  int64_t submit = 0;
  int64_t run = 0;       // what it really ran (possibly clipped to `estimate`)
  int64_t estimate = 0;  // the user's requested time: the planner's duration
  int64_t procs = 1;
  int64_t user = -1, group = -1;
};

enum class swf_filter {
  // SC'15 (Gaussier et al.) on KTH-SP2: allocated and requested processors <= MaxProcs (a
  // missing one taken from the other), run > 0, requested time > 0, submit >= 0; run clipped
  // to the requested time; the job asks for its allocated processors.
  sc15,
  // Batsim's comparison on SDSC-SP2: rows with -1 in submit, wait, run or allocated
  // processors dropped, every status kept; requested processors (allocated when -1); run
  // clipped to the requested time (Batsim kills a job there).
  batsim,
};
const char* to_string(swf_filter f);
bool swf_filter_from(const std::string& name, swf_filter& out);
// The filter as recorded with every result.
std::string describe(swf_filter f);

// capacity: the machine's processors (the trace's MaxProcs unless given).
std::vector<sim_job> filter_jobs(const swf_trace& t, swf_filter f, int64_t capacity);

// filter_jobs(read_swf(path, lenient), f, capacity) without keeping the records (a 200k-job
// trace's are 19 MB, whose fresh pages were a tenth of `baton-replay simulate`'s time):
// each is filtered as it is read. procs > 0 is the capacity, otherwise the trace's MaxProcs.
// `t` is read_swf's trace, its `records` left empty; the same errors.
std::vector<sim_job> read_swf_jobs(const std::string& path, bool lenient, swf_filter f, int64_t procs, swf_trace& t,
                                   swf_inflate how = swf_inflate::automatic);

}  // namespace baton::replay
