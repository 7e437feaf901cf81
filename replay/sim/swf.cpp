#include "replay/sim/swf.hpp"

#include <zlib.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/util/sha256.hpp"

namespace baton::replay {

namespace {

// The file's bytes as stored (they are hashed as they are, and inflated when gzip).
std::string read_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::string out;
  struct stat st {};
  if (::fstat(fileno(f), &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw std::runtime_error("cannot read " + path);
  return out;
}

bool gzip_at(const std::string& b, size_t at) {
  return b.size() >= at + 2 && static_cast<unsigned char>(b[at]) == 0x1f && static_cast<unsigned char>(b[at + 1]) == 0x8b;
}

// Every gzip member of `in` in turn, as gzip reads them (bytes after the last member that do
// not begin another are ignored, as gzip ignores them), a block at a time so the whole
// inflated trace is never held (its pages were a tenth of a 200k-job run). `sink.block()`
// gives the block to inflate into (nullptr: stop, the reader gave up), `sink.filled(n)` takes
// it with n bytes of text. Returns "" or why the stream ended early: the caller decides
// whether a partial trace is acceptable.
constexpr size_t text_block = size_t{1} << 18;

// zlib's own memory (its state and 32 KiB window, about 40 KiB) from a buffer the caller
// allocated: on the inflating thread, malloc would open that thread's own arena, whose first
// pages (a 2 MiB huge page under this program's jemalloc options) cost more to fault in than
// inflating the first block.
struct zlib_memory {
  std::unique_ptr<char[]> buf{new char[size_t{64} << 10]};
  size_t used = 0;
  static voidpf alloc(voidpf self, uInt items, uInt size) {
    auto& m = *static_cast<zlib_memory*>(self);
    const size_t n = (size_t{items} * size + 15) & ~size_t{15};
    if (m.used + n > (size_t{64} << 10)) return std::calloc(items, size);  // (zlib asks for less)
    void* p = m.buf.get() + m.used;
    m.used += n;
    return p;
  }
  static void release(voidpf self, voidpf p) {
    auto& m = *static_cast<zlib_memory*>(self);
    if (p < static_cast<void*>(m.buf.get()) || p >= static_cast<void*>(m.buf.get() + (size_t{64} << 10))) std::free(p);
  }
};

template <class Sink>
std::string inflate_gzip(const std::string& in, Sink& sink, zlib_memory& memory) {
  z_stream z{};
  z.zalloc = zlib_memory::alloc;
  z.zfree = zlib_memory::release;
  z.opaque = &memory;
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error("zlib: cannot start inflating");
  // Ended however this returns: the text's consumer may throw (strict reading).
  struct ender {
    z_stream& z;
    ~ender() { inflateEnd(&z); }
  } end_it{z};
  constexpr size_t chunk = size_t{1} << 30;  // zlib counts in 32 bits
  size_t in_pos = 0;
  std::string damage;
  for (;;) {
    if (z.avail_in == 0 && in_pos < in.size()) {
      const size_t n = std::min(in.size() - in_pos, chunk);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
      z.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    char* out = sink.block();
    if (!out) return {};
    z.next_out = reinterpret_cast<Bytef*>(out);
    z.avail_out = static_cast<uInt>(text_block);
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (z.avail_out < text_block) sink.filled(text_block - z.avail_out);
    if (rc == Z_STREAM_END) {
      const size_t next = in_pos - z.avail_in;
      if (!gzip_at(in, next)) break;
      inflateReset(&z);
      continue;
    }
    if (rc == Z_OK || (rc == Z_BUF_ERROR && (z.avail_in > 0 || in_pos < in.size()))) continue;
    damage = rc == Z_BUF_ERROR ? "the gzip stream ends early (the file is truncated)"
                               : std::string("the gzip stream is damaged (") + (z.msg ? z.msg : "zlib error") + ")";
    break;
  }
  return damage;
}

// Inflating on this thread: each block handed to `text` as soon as it is filled.
template <class F>
std::string inflate_inline(const std::string& in, F&& text) {
  struct sink {
    F& text;
    std::unique_ptr<char[]> buf{new char[text_block]};
    char* block() { return buf.get(); }
    void filled(size_t n) { text(buf.get(), n); }
  } s{text};
  zlib_memory memory;
  return inflate_gzip(in, s, memory);
}

// Inflating on a second thread while this one parses what is already inflated: a 200k-job
// trace spends about as long in each, and the machine has two cores. The blocks reach `text`
// whole and in order, as inflate_inline hands them, so what is read (records, line numbers,
// errors, damage) is the same (tests). A throw from `text` (strict reading) stops the
// inflating thread before it propagates.
template <class F>
std::string inflate_threaded(const std::string& in, F&& text) {
  constexpr size_t blocks = 4;
  struct shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::unique_ptr<char[]>> buf;
    std::vector<size_t> free;                    // blocks the inflater may fill
    std::deque<std::pair<size_t, size_t>> full;  // (block, bytes) for the parser, in order
    bool done = false, stop = false;
    std::string damage;
    std::exception_ptr failed;
  } q;
  for (size_t b = 0; b < blocks; ++b) q.buf.emplace_back(new char[text_block]), q.free.push_back(b);
  zlib_memory memory;  // (allocated here, on this thread: see zlib_memory)
  struct sink {
    shared& q;
    size_t held = blocks;  // the block being filled (blocks: none)
    char* block() {
      if (held == blocks) {
        std::unique_lock<std::mutex> lock(q.mu);
        q.cv.wait(lock, [&] { return q.stop || !q.free.empty(); });
        if (q.stop) return nullptr;
        held = q.free.back();
        q.free.pop_back();
      }
      return q.buf[held].get();
    }
    void filled(size_t n) {
      {
        std::lock_guard<std::mutex> lock(q.mu);
        q.full.emplace_back(held, n);
      }
      held = blocks;
      q.cv.notify_all();
    }
  };
  std::thread inflater([&q, &in, &memory] {
    sink s{q};
    std::string damage;
    std::exception_ptr failed;
    try {
      damage = inflate_gzip(in, s, memory);
    } catch (...) {
      failed = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(q.mu);
    q.damage = std::move(damage);
    q.failed = failed;
    q.done = true;
    q.cv.notify_all();
  });
  // However this ends, the inflater is told to stop and joined before `q` goes.
  struct joiner {
    shared& q;
    std::thread& t;
    ~joiner() {
      {
        std::lock_guard<std::mutex> lock(q.mu);
        q.stop = true;
      }
      q.cv.notify_all();
      t.join();
    }
  } join_it{q, inflater};
  for (;;) {
    std::pair<size_t, size_t> next;
    {
      std::unique_lock<std::mutex> lock(q.mu);
      q.cv.wait(lock, [&] { return q.done || !q.full.empty(); });
      if (q.full.empty()) break;  // done, and every block read
      next = q.full.front();
      q.full.pop_front();
    }
    text(q.buf[next.first].get(), next.second);
    {
      std::lock_guard<std::mutex> lock(q.mu);
      q.free.push_back(next.first);
    }
    q.cv.notify_all();
  }
  if (q.failed) std::rethrow_exception(q.failed);
  return q.damage;
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

bool blank(char c) {
  return static_cast<unsigned char>(c) <= ' ' && (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f');
}
bool digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// A field as docs/replay.md states the rule: an integer or a decimal whose fraction is
// dropped, -1 or not negative, its integer part at most 18 digits. "" or why not.
const char* parse_field(const char* p, const char* end, int64_t& v) {
  const bool negative = *p == '-';
  if (negative) ++p;
  if (p == end || !digit(*p)) return "is not a number";
  while (p != end && *p == '0') ++p;
  int64_t n = 0;
  int digits = 0;
  for (; p != end && digit(*p); ++p, ++digits)
    if (digits < 18) n = n * 10 + (*p - '0');
  if (digits > 18) return "is too large";
  bool fraction = false;
  if (p != end && *p == '.')
    for (++p; p != end && digit(*p); ++p) fraction |= *p != '0';
  if (p != end) return "is not a number";
  if (negative && (n > 1 || (n == 1 && fraction))) return "is negative and not -1 (unknown)";
  v = negative ? -n : n;
  return "";
}

// What a reason shows of the field: its first characters, anything unprintable as '?'.
std::string shown(const char* b, const char* e) {
  std::string s(b, std::min<size_t>(static_cast<size_t>(e - b), 24));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return e - b > 24 ? s + "..." : s;
}

// One record line into `r`: "" or why it is malformed. The character at `end` is never a
// digit or a blank (the line's '\n', or the '\0' ending the string that holds it): the common
// field's loop need not look for the line's end.
std::string parse_record(const char* p, const char* end, swf_record& r) {
  int64_t f[18];
  int n = 0;
  while (true) {
    while (*p == ' ' || blank(*p)) ++p;  // (stops at `end`: not a blank)
    if (p == end) break;
    if (n == 18) return "more than 18 fields";
    const char* b = p;
    // The common field, read in one go: -1 or up to 18 digits, then a blank or the line's end.
    // (Unsigned: a longer run of digits wraps instead of overflowing, and goes the slow way.)
    const bool negative = *p == '-';
    p += negative;
    const char* digits = p;
    uint64_t v = 0;
    while (digit(*p)) v = v * 10 + static_cast<uint64_t>(*p++ - '0');
    if (p != digits && p - digits <= 18 && (p == end || blank(*p)) && !(negative && v > 1)) {
      f[n++] = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
      continue;
    }
    // Anything else (a decimal, more digits, a fault) by the whole rule.
    for (p = b; p != end && !blank(*p);) ++p;
    if (const char* why = parse_field(b, p, f[n]); *why)
      return "field " + std::to_string(n + 1) + " ('" + shown(b, p) + "') " + why;
    ++n;
  }
  if (n < 18) return "truncated: " + std::to_string(n) + " of 18 fields";
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
  return {};
}

// How a read inflates a .gz: on a second thread from this size of file on (smaller ones are
// read before a thread would have started).
constexpr size_t threaded_from = size_t{1} << 20;

// The reading both read_swf and read_swf_jobs do: every record line parsed and handed to
// `add` (with its line's number), the header's MaxProcs, the counts and the damage in `t`.
// `expect(n)` is told first how many records the file could hold at most.
template <class Expect, class Add>
void read_records(const std::string& path, bool lenient, swf_inflate how, swf_trace& t, Expect&& expect, Add&& add) {
  std::string why;
  auto line = [&](const char* p, const char* e) {
    ++t.lines;
    const char* first = p;
    while (first != e && blank(*first)) ++first;
    if (first == e) return;
    if (*first == ';') {
      header_value(std::string(first, e), "MaxProcs", t.max_procs);
      return;
    }
    swf_record r;
    why = parse_record(first, e, r);
    if (why.empty()) {
      ++t.record_count;
      add(r);
    } else if (!lenient) {
      throw swf_error(path + ":" + std::to_string(t.lines) + ": " + why);
    } else {
      ++t.malformed_lines;
      if (t.first_malformed.size() < swf_bad_lines_listed) t.first_malformed.push_back({t.lines, why});
    }
  };
  // Whole lines of `p, n`; a line cut at the end of a piece waits in `carry` for the next.
  // (A line handed on ends at a '\n', or at the '\0' ending `carry`: parse_record's sentinel.)
  std::string carry;
  auto pieces = [&](const char* p, size_t n) {
    const char* const stop = p + n;
    while (p != stop) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(stop - p)));
      if (!nl) {
        carry.append(p, stop);
        return;
      }
      if (carry.empty()) {
        line(p, nl);
      } else {
        carry.append(p, nl);
        line(carry.data(), carry.data() + carry.size());
        carry.clear();
      }
      p = nl + 1;
    }
  };
  std::string damage;
  {
    const std::string bytes = read_bytes(path);
    // A .gz's last four bytes give its inflated size (mod 2^32; bounded: a cut file has none).
    // A record is at least 36 bytes.
    size_t text_size = bytes.size();
    const bool gz = gzip_at(bytes, 0);
    if (gz && bytes.size() >= 18) {
      text_size = 0;
      for (size_t i = 1; i <= 4; ++i) text_size = text_size << 8 | static_cast<unsigned char>(bytes[bytes.size() - i]);
      text_size = std::min(text_size, bytes.size() * 16);
    }
    expect(text_size / 36 + 1);
    if (!gz) {
      t.sha256 = util::sha256_hex(bytes);
      pieces(bytes.data(), bytes.size());
    } else if (how == swf_inflate::inline_only || (how == swf_inflate::automatic && bytes.size() < threaded_from)) {
      t.sha256 = util::sha256_hex(bytes);
      damage = inflate_inline(bytes, pieces);
    } else {
      // The hash on the parsing thread, while the inflater gets ahead (parsing is the faster).
      damage = inflate_threaded(bytes, [&, hashed = false](const char* p, size_t n) mutable {
        if (!hashed) t.sha256 = util::sha256_hex(bytes), hashed = true;
        pieces(p, n);
      });
      if (t.sha256.empty()) t.sha256 = util::sha256_hex(bytes);
    }
  }
  // A stream that ends early is the whole file's fault, not its last line's (cut short).
  if (!damage.empty()) {
    damage += " after line " + std::to_string(t.lines);
    if (!lenient) throw swf_error(path + ": " + damage);
  }
  if (!carry.empty()) line(carry.data(), carry.data() + carry.size());  // the last line, with no newline
  t.damaged = damage;
  if (t.record_count == 0) throw swf_error(path + " holds no SWF record");
}

// The job a record is under the filter, or false when the filter drops it.
bool job_of(const swf_record& r, swf_filter f, int64_t capacity, sim_job& j) {
  j.id = r.job;
  j.submit = r.submit;
  j.user = r.user;
  j.group = r.group;
  if (f == swf_filter::sc15) {
    int64_t alloc = r.allocated_procs > 0 ? r.allocated_procs : r.requested_procs;
    int64_t req = r.requested_procs > 0 ? r.requested_procs : r.allocated_procs;
    if (alloc <= 0 || alloc > capacity || req > capacity) return false;
    if (r.run <= 0 || r.requested_time <= 0 || r.submit < 0) return false;
    j.procs = alloc;
    j.estimate = r.requested_time;
    j.run = std::min(r.run, r.requested_time);
  } else {
    if (r.submit < 0 || r.wait < 0 || r.run < 0 || r.allocated_procs < 0) return false;
    j.procs = r.requested_procs > 0 ? r.requested_procs : r.allocated_procs;
    j.estimate = r.requested_time > 0 ? r.requested_time : r.run;
    j.run = std::min(r.run, j.estimate);
  }
  return true;
}

}  // namespace

swf_trace read_swf(const std::string& path, bool lenient, swf_inflate how) {
  swf_trace t;
  // Room for as many records as the text could hold: reserved address space, so the vector
  // never regrows; only the pages written are touched.
  read_records(
      path, lenient, how, t, [&](size_t most) { t.records.reserve(most); }, [&](const swf_record& r) { t.records.push_back(r); });
  return t;
}

std::vector<sim_job> read_swf_jobs(const std::string& path, bool lenient, swf_filter f, int64_t procs, swf_trace& t,
                                   swf_inflate how) {
  t = swf_trace{};
  std::vector<sim_job> jobs;
  // SC'15's capacity test waits for MaxProcs when that is the capacity (a header may come
  // anywhere): each kept job's larger processor count, to test once the file is read.
  const bool later = f == swf_filter::sc15 && procs <= 0;
  std::vector<int64_t> widest;
  read_records(
      path, lenient, how, t,
      [&](size_t most) {
        jobs.reserve(most);
        if (later) widest.reserve(most);
      },
      [&](const swf_record& r) {
        sim_job j;
        if (!job_of(r, f, later ? std::numeric_limits<int64_t>::max() : procs, j)) return;
        jobs.push_back(j);
        if (later) widest.push_back(std::max(r.allocated_procs, r.requested_procs));
      });
  if (later) {
    size_t kept = 0;
    for (size_t i = 0; i < jobs.size(); ++i)
      if (widest[i] <= t.max_procs) jobs[kept++] = jobs[i];
    jobs.resize(kept);
  }
  return jobs;
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
  for (const auto& r : t.records)
    if (sim_job j; job_of(r, f, capacity, j)) out.push_back(j);
  return out;
}

}  // namespace baton::replay
