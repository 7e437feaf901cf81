// blob_bench: bundles through a real batond's local backend (docs/benchmarks.md, "Blob
// transfers"). batond runs as a child process with its default storage; in one run, on one disk:
//   - `cp` + fsync of a file, and the same copy read and written 1 MiB at a time, against an
//     upload of it through the routes a CLI uses (POST /blobs/uploads, PUT of the bytes sent
//     with sendfile, POST …/complete: hashed, fsynced, renamed, `storage.blob_stored`
//     recorded) and a download of it (GET /jobs/{id}/files, then the grant, written to a file
//     and fsynced, with the time its client spent in write(); and once more with the bytes
//     discarded, batond's own rate); best of three each, interleaved; batond's CPU time per
//     GiB up and down;
//   - batond's peak RSS growth while four such transfers run at once (two up, two down);
//   - the latency of assigning polls (real workers; each poll hands out a job, so each one is
//     an append the scheduler waits to be durable) sent at a fixed rate, as a fleet polls,
//     alone before, during the four transfers, and alone after. Latency counts from the time
//     a poll was due, so a stalled server is not hidden by polls that were never sent.
//
//   blob_bench [--dir DIR] [--size-mib N] [--poll-rate N]
//   (DIR: where the files and batond's data go, on the disk to measure; N polls/s in all)
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/proc_cpu.hpp"
#include "core/util/sha256.hpp"
#include "support/batond_process.hpp"
#include "support/loopback_socket.hpp"

using nlohmann::json;

namespace {

using clock_type = std::chrono::steady_clock;
constexpr size_t mib = size_t{1} << 20;
const char* poll_image = "bench-image";  // the pollers' workers and jobs; the bundle job uses another

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

long status_kib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, field.size() + 1, field + ":") == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

std::string sha256_of_file(const std::string& path) {
  baton::util::sha256_stream h;
  int fd = ::open(path.c_str(), O_RDONLY);
  std::vector<char> buf(mib);
  for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) h.update(buf.data(), static_cast<size_t>(n));
  ::close(fd);
  return h.hex();
}

// A file of random bytes whose first 8 bytes are `variant` (each upload must be a blob batond
// does not hold yet); its SHA-256.
std::string make_file(const std::string& path, size_t size, uint64_t variant) {
  std::mt19937_64 gen(42);
  std::vector<uint64_t> block(mib / 8);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  for (size_t done = 0; done < size; done += mib) {
    for (auto& v : block) v = gen();
    if (done == 0) block[0] = variant;
    const size_t n = std::min(mib, size - done);
    if (::write(fd, block.data(), n) != static_cast<ssize_t>(n)) throw std::runtime_error("cannot write " + path);
  }
  ::fsync(fd);
  ::close(fd);
  return sha256_of_file(path);
}

void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

double cp_fsync(const std::string& from, const std::string& to) {
  auto t = clock_type::now();
  const std::string cmd = "cp '" + from + "' '" + to + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cp failed");
  fsync_path(to);
  const double s = seconds_since(t);
  std::filesystem::remove(to);
  return s;
}

// The same copy through a process: read and write 1 MiB at a time, then fsync (what `dd bs=1M`
// does). `cp` copies inside the kernel (copy_file_range); anything that moves bytes through a
// socket, a download's client included, writes from user space like this.
double rw_fsync(const std::string& from, const std::string& to) {
  auto t = clock_type::now();
  int in = ::open(from.c_str(), O_RDONLY), out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char> buf(mib);
  for (ssize_t n; (n = ::read(in, buf.data(), buf.size())) > 0;)
    if (::write(out, buf.data(), static_cast<size_t>(n)) != n) throw std::runtime_error("cannot write " + to);
  ::fsync(out);
  ::close(in);
  ::close(out);
  const double s = seconds_since(t);
  std::filesystem::remove(to);
  return s;
}

bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The status of the response on fd (its head read byte by byte: it is short); the body is
// left unread.
int read_status(int fd, size_t* content_length = nullptr) {
  std::string head;
  char c;
  while (head.size() < 65536 && ::recv(fd, &c, 1, 0) == 1) {
    head += c;
    if (head.size() >= 4 && head.compare(head.size() - 4, 4, "\r\n\r\n") == 0) break;
  }
  if (head.size() < 12) return 0;
  if (content_length) {
    auto at = head.find("Content-Length: ");
    *content_length = at == std::string::npos ? 0 : std::stoull(head.substr(at + 16));
  }
  return std::stoi(head.substr(9, 3));
}

struct blob {
  std::string path, sha256;
};

const std::string operator_header = std::string("X-API-Token: ") + baton::test::test_token + "\r\n";

// Uploads the file as `baton submit` does: ask, PUT every byte, complete. Seconds, or -1.
double upload(const baton::test::batond_process& b, const blob& f, size_t size) {
  auto c = b.client();
  c->set_read_timeout(600, 0);
  auto t = clock_type::now();
  auto asked =
      c->Post("/blobs/uploads", json{{"purpose", "bundle"}, {"sha256", f.sha256}, {"size", size}}.dump(), "application/json");
  if (!asked || asked->status != 200) {
    std::fprintf(stderr, "POST /blobs/uploads: %d %s\n", asked ? asked->status : 0, asked ? asked->body.c_str() : "");
    return -1;
  }
  auto plan = json::parse(asked->body);
  const std::string url = plan["parts"][0]["url"], id = plan["upload_id"];
  int fd = baton::test::connect_loopback(b.port(), 600);
  std::string head = "PUT " + url + "?offset=0 HTTP/1.1\r\nHost: x\r\n" + operator_header +
                     "Content-Length: " + std::to_string(size) + "\r\n\r\n";
  int in = ::open(f.path.c_str(), O_RDONLY);
  bool ok = send_all(fd, head.data(), head.size());
  for (off_t at = 0; ok && static_cast<size_t>(at) < size;) ok = ::sendfile(fd, in, &at, size - static_cast<size_t>(at)) > 0;
  ::close(in);
  const int status = ok ? read_status(fd) : 0;
  ::close(fd);
  if (status != 200) {
    std::fprintf(stderr, "PUT %s: status %d\n", url.c_str(), status);
    return -1;
  }
  auto done = c->Post("/blobs/uploads/" + id + "/complete", "{}", "application/json");
  if (!done || done->status != 200) {
    std::fprintf(stderr, "complete: %d %s\n", done ? done->status : 0, done ? done->body.c_str() : "");
    return -1;
  }
  return seconds_since(t);
}

// Downloads the job's bundle as `baton jobs fetch` would: ask for the job's files, GET the
// grant into a file, fsync (`to` empty: the bytes are discarded, as if a worker on another
// host wrote them to its own disk). Seconds, or -1.
double download(const baton::test::batond_process& b, const std::string& job, size_t size, const std::string& to,
                double* writing = nullptr) {
  auto c = b.client();
  auto t = clock_type::now();
  auto files = c->Get("/jobs/" + job + "/files");
  if (!files || files->status != 200) return -1;
  const std::string url = json::parse(files->body)["input_bundle"]["download"]["url"];
  int fd = baton::test::connect_loopback(b.port(), 600);
  std::string req = "GET " + url + " HTTP/1.1\r\nHost: x\r\n" + operator_header + "Connection: close\r\n\r\n";
  size_t length = 0;
  if (!send_all(fd, req.data(), req.size()) || read_status(fd, &length) != 200 || length != size) {
    ::close(fd);
    return -1;
  }
  int out = to.empty() ? -1 : ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char> buf(mib);
  size_t got = 0;
  double in_write = 0;
  for (ssize_t n; (n = ::recv(fd, buf.data(), buf.size(), MSG_WAITALL)) > 0;) {
    const auto w = clock_type::now();
    if (out >= 0 && ::write(out, buf.data(), static_cast<size_t>(n)) != n) break;
    in_write += seconds_since(w);
    got += static_cast<size_t>(n);
  }
  if (writing) *writing = in_write;
  if (out >= 0) {
    ::fsync(out);
    ::close(out);
  }
  ::close(fd);
  const double secs = seconds_since(t);
  if (out >= 0) std::filesystem::remove(to);
  return got == size ? secs : -1;
}

// Registered workers, each to be polled once (its poll takes a job).
struct fleet {
  std::vector<std::string> ids, tokens;
  std::atomic<size_t> next{0};
};

struct poll_figures {
  std::vector<double> latencies_ms;
  size_t failed = 0;
  bool ran_out = false;  // no worker left to poll before the phase ended
};

// Polls at `rate` per second in all over `connections` keep-alive connections until `stop`
// (or `count` polls when count > 0). Each poll is due at its slot; its latency runs from then.
poll_figures poll_at_rate(const baton::test::batond_process& b, fleet& f, double rate, int connections,
                          const std::atomic<bool>& stop, size_t count) {
  std::vector<poll_figures> each(static_cast<size_t>(connections));
  std::vector<std::thread> threads;
  const auto start = clock_type::now();
  const auto interval = std::chrono::duration<double>(connections / rate);
  for (int p = 0; p < connections; ++p)
    threads.emplace_back([&, p] {
      auto c = b.client("");
      c->set_keep_alive(true);
      auto& mine = each[static_cast<size_t>(p)];
      // Slots of this connection: start + (k + p/connections) * interval.
      for (size_t k = 0; count > 0 ? k * connections + p < count : !stop.load(); ++k) {
        const auto due = start + std::chrono::duration_cast<clock_type::duration>(
                                     interval * (static_cast<double>(k) + static_cast<double>(p) / connections));
        std::this_thread::sleep_until(due);  // the fleet's pace (a load generator's clock, not a wait for a condition)
        const size_t w = f.next++;
        if (w >= f.ids.size()) {
          mine.ran_out = true;
          return;
        }
        auto r = c->Post("/jobs/request?worker_id=" + f.ids[w], {{"X-Worker-Token", f.tokens[w]}}, "", "application/json");
        const bool assigned = r && r->status == 200 && r->body.find("\"job_id\"") != std::string::npos;
        if (!assigned) ++mine.failed;
        mine.latencies_ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - due).count());
      }
    });
  for (auto& t : threads) t.join();
  poll_figures all;
  for (auto& e : each) {
    all.latencies_ms.insert(all.latencies_ms.end(), e.latencies_ms.begin(), e.latencies_ms.end());
    all.failed += e.failed;
    all.ran_out = all.ran_out || e.ran_out;
  }
  return all;
}

// A histogram of batond's GET /metrics (cumulative bucket counts by `le`), to read where a
// slow poll waited: the log's fsync or the append around it.
std::map<std::string, double> histogram(const baton::test::batond_process& b, const std::string& name) {
  std::map<std::string, double> out;
  auto r = b.client()->Get("/metrics");
  if (!r || r->status != 200) return out;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + "_bucket{le=\"", 0) == 0) {
      const auto q = line.find('"') + 1;
      out[line.substr(q, line.find('"', q) - q)] = std::atof(line.c_str() + line.rfind(' ') + 1);
    }
  return out;
}

// "n (k over 0.1 s, m over 1 s)" for a histogram's samples between two readings.
std::string slow_count(const std::map<std::string, double>& before, const std::map<std::string, double>& after) {
  auto at = [](const std::map<std::string, double>& h, const std::string& le) {
    auto it = h.find(le);
    return it == h.end() ? 0.0 : it->second;
  };
  const double all = at(after, "+Inf") - at(before, "+Inf");
  const double over_01 = all - (at(after, "0.1") - at(before, "0.1")), over_1 = all - (at(after, "1") - at(before, "1"));
  char text[128];
  std::snprintf(text, sizeof text, "%.0f (%.0f over 0.1 s, %.0f over 1 s)", all, over_01, over_1);
  return text;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Runs body(i) for i in [0, n) on `threads` threads.
template <class Body>
void in_parallel(size_t n, int threads, Body body) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (size_t i; (i = next++) < n;) body(i);
    });
  for (auto& t : ts) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  std::string base = ".";
  size_t size_mib = 1024;
  double poll_rate = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--dir")
      base = argv[i + 1];
    else if (a == "--size-mib")
      size_mib = std::stoul(argv[i + 1]);
    else if (a == "--poll-rate")
      poll_rate = std::stod(argv[i + 1]);
  }
  setenv("TMPDIR", base.c_str(), 1);  // batond's data dir and the files: on the disk measured
  baton::test::temp_dir dir;
  const size_t size = size_mib * mib;
  const double mb = static_cast<double>(size) / 1e6;
  // Many connections, as a fleet's workers each have their own: one slow answer must not hold
  // back the polls due after it (they would count its wait too).
  const int poll_connections = 32;
  const double alone_seconds = 5, longest_transfers = 60;  // workers for that long at the rate
  std::printf("blob_bench: %zu MiB files in %s, assigning polls at %.0f/s\n", size_mib, dir.path().c_str(), poll_rate);
  // Five distinct blobs: three rounds of throughput and two uploads among the four at once.
  std::vector<blob> files;
  for (uint64_t v = 0; v < 5; ++v) {
    const std::string path = dir / ("source-" + std::to_string(v));
    files.push_back({path, make_file(path, size, v)});
  }
  baton::test::batond_process b(dir,
                                "log_level: warn\n"
                                "workers: {heartbeat_interval_seconds: 3600, reaper_interval_seconds: 3600}\n"
                                // One token uploads, downloads and creates every job: the bench
                                // measures transfers and polls, not the per-caller budgets.
                                "limits: {operator_requests_per_second: 0, worker_requests_per_second: 0}\n"
                                // Neither periodic loop: the planning cycle (every 45 s) copies
                                // the 70,000 queued jobs for the planner, and the priority
                                // recalculation (every 60 s) builds their new order beside the old
                                // one, each 60 - 90 MB for about a second; whether one fell among
                                // the four transfers decided the RSS figure, which is meant to
                                // show what the transfers hold.
                                "scheduling: {max_jobs_per_user: 100000000, priority_calc_period_seconds: 86400,\n"
                                "             backfill: {bf_interval_seconds: 86400}}\n"
                                "jobs: {worker_images: [" +
                                    std::string(poll_image) + ", bundle-image]}\n");
  if (!b.port()) {
    std::fprintf(stderr, "batond did not start: %s\n", b.err().c_str());
    return 1;
  }
  // The pollers' workers and as many jobs, through the API.
  fleet f;
  const size_t workers = static_cast<size_t>(poll_rate * (2 * alone_seconds + longest_transfers));
  f.ids.resize(workers);
  f.tokens.resize(workers);
  in_parallel(workers, 8, [&](size_t k) {
    thread_local auto c = b.client();
    auto r = c->Post("/workers/register",
                     json{{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}, {"worker_image_key", poll_image}}.dump(),
                     "application/json");
    if (!r || r->status != 200) std::abort();
    auto j = json::parse(r->body);
    f.ids[k] = j["worker_id"];
    f.tokens[k] = j["worker_token"];
  });
  for (size_t made = 0; made < workers; made += 10000) {
    const size_t n = std::min<size_t>(10000, workers - made);
    auto r = b.client()->Post(
        "/jobs/batch",
        json{{"array", "0-" + std::to_string(n - 1)},
             {"job", {{"title", "bench"}, {"input_bundle_path", "/bundles/bench"}, {"worker_image_key", poll_image}}}}
            .dump(),
        "application/json");
    if (!r || r->status != 200) {
      std::fprintf(stderr, "POST /jobs/batch: %d %s\n", r ? r->status : 0, r ? r->body.c_str() : "");
      return 1;
    }
  }
  int rc = 0;
  // Throughput, best of three each, interleaved so a neighbour's load hits each alike. (On
  // the project's VM a write into page-cache pages the guest never touched before runs at a
  // fraction of the speed of one into reused pages, dd included: the best run is the measure.)
  double cp = 1e9, rw = 1e9, up = 1e9, down = 1e9, down_served = 1e9;
  double up_cpu = 1e9, down_cpu = 1e9;
  double down_writing =
      0;  // of the best written download, the seconds its client spent in write()  // batond's CPU seconds, the least of the three
  std::string bundle_job;
  for (int round = 0; round < 3; ++round) {
    cp = std::min(cp, cp_fsync(files[round].path, dir / "copy"));
    rw = std::min(rw, rw_fsync(files[round].path, dir / "copy"));
    double cpu = baton::bench::cpu_us(b.pid()) / 1e6;
    const double u = upload(b, files[round], size);
    if (u < 0) return 1;
    up = std::min(up, u);
    up_cpu = std::min(up_cpu, baton::bench::cpu_us(b.pid()) / 1e6 - cpu);
    if (round == 0) {  // the job whose bundle is downloaded (its image has no worker: it stays queued)
      auto r = b.client()->Post("/jobs",
                                json{{"title", "bundle"},
                                     {"worker_image_key", "bundle-image"},
                                     {"input_bundle", {{"sha256", files[0].sha256}, {"size", size}}}}
                                    .dump(),
                                "application/json");
      if (!r || r->status != 200) {
        std::fprintf(stderr, "POST /jobs: %d %s\n", r ? r->status : 0, r ? r->body.c_str() : "");
        return 1;
      }
      bundle_job = json::parse(r->body)["id"];
    }
    double in_write = 0;
    const double d = download(b, bundle_job, size, dir / "downloaded", &in_write);
    if (d < 0) return 1;
    if (d < down) down_writing = in_write;
    down = std::min(down, d);
    // The same download with the bytes discarded: what batond serves. A client that writes them
    // gets a fraction of that here (docs/benchmarks.md, "Blob transfers").
    cpu = baton::bench::cpu_us(b.pid()) / 1e6;
    const double served = download(b, bundle_job, size, "");
    if (served < 0) return 1;
    down_cpu = std::min(down_cpu, baton::bench::cpu_us(b.pid()) / 1e6 - cpu);
    down_served = std::min(down_served, served);
  }
  std::atomic<bool> stop{false};
  const size_t alone_polls = static_cast<size_t>(poll_rate * alone_seconds);
  auto before = poll_at_rate(b, f, poll_rate, poll_connections, stop, alone_polls);
  // Four transfers at once (two up, two down) with the polls going on meanwhile. The clients
  // stand in for workers on other hosts: the downloads' bytes are not written to batond's disk
  // (the uploads read files the page cache holds).
  { std::ofstream("/proc/" + std::to_string(b.pid()) + "/clear_refs") << "5"; }
  const long rss_before = status_kib(b.pid(), "VmRSS");
  const auto fsync_before = histogram(b, "baton_log_fsync_seconds"), append_before = histogram(b, "baton_log_append_seconds");
  poll_figures during;
  std::thread polling([&] { during = poll_at_rate(b, f, poll_rate, poll_connections, stop, 0); });
  std::vector<std::thread> transfers;
  std::atomic<int> failed{0};
  const auto transfers_start = clock_type::now();
  // The transfers' clients stand in for workers on other hosts; here they share batond's
  // cores, so they run below it (the pollers do not: their latency is what is measured).
  auto as_remote = [] { setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10); };
  for (int i = 0; i < 2; ++i) {
    transfers.emplace_back([&, i] {
      as_remote();
      if (upload(b, files[3 + static_cast<size_t>(i)], size) < 0) ++failed;
    });
    transfers.emplace_back([&] {
      as_remote();
      if (download(b, bundle_job, size, "") < 0) ++failed;
    });
  }
  for (auto& t : transfers) t.join();
  const double transfers_seconds = seconds_since(transfers_start);
  stop = true;
  polling.join();
  const long rss_peak = status_kib(b.pid(), "VmHWM");
  const auto fsync_after = histogram(b, "baton_log_fsync_seconds"), append_after = histogram(b, "baton_log_append_seconds");
  stop = false;
  auto after = poll_at_rate(b, f, poll_rate, poll_connections, stop, alone_polls);
  if (failed) {
    std::fprintf(stderr, "%d of the four transfers failed\n", failed.load());
    rc = 1;
  }
  for (const auto* p : {&before, &during, &after}) {
    if (p->failed) {
      std::fprintf(stderr, "%zu polls did not assign a job\n", p->failed);
      rc = 1;
    }
    if (p->ran_out) {
      std::fprintf(stderr, "the pollers ran out of workers (the transfers took %.0f s)\n", transfers_seconds);
      rc = 1;
    }
  }
  const double p99_before = percentile(before.latencies_ms, 0.99), p99_after = percentile(after.latencies_ms, 0.99);
  const double p99_alone = std::max(p99_before, p99_after), p99_during = percentile(during.latencies_ms, 0.99);
  std::printf("\n| measure | value |\n|---|---|\n");
  const double gib = static_cast<double>(size) / (1 << 30);
  std::printf("| `cp` + fsync, %zu MiB | %.0f MB/s |\n", size_mib, mb / cp);
  std::printf("| read + write 1 MiB at a time + fsync | %.0f MB/s (%.0f %% of cp) |\n", mb / rw, 100 * cp / rw);
  std::printf("| upload (POST, PUT hashed, fsynced, renamed, complete) | %.0f MB/s (%.0f %% of cp, %.0f %% of read + write) |\n",
              mb / up, 100 * cp / up, 100 * rw / up);
  std::printf(
      "| download (GET files, GET hashed, written to a file, fsynced) | %.0f MB/s (%.0f %% of cp, %.0f %% of read + write; "
      "the client's write() calls %.2f s of %.2f s) |\n",
      mb / down, 100 * cp / down, 100 * rw / down, down_writing, down);
  std::printf("| download, the bytes discarded (what batond serves, hashed) | %.0f MB/s (%.0f %% of cp) |\n", mb / down_served,
              100 * cp / down_served);
  std::printf("| batond's CPU per GiB: upload, download | %.2f s, %.2f s |\n", up_cpu / gib, down_cpu / gib);
  std::printf("| batond's peak RSS growth, 2 uploads + 2 downloads at once (%.1f s) | %.1f MiB |\n", transfers_seconds,
              (rss_peak - rss_before) / 1024.0);
  std::printf("| assigning poll p99 alone, before and after (%.0f/s, %zu polls each) | %.2f ms, %.2f ms |\n", poll_rate,
              before.latencies_ms.size(), p99_before, p99_after);
  std::printf("| assigning poll p99 during the four transfers (%zu polls; max %.2f ms) | %.2f ms (%.1f× the larger alone) |\n",
              during.latencies_ms.size(), percentile(during.latencies_ms, 1.0), p99_during,
              p99_alone > 0 ? p99_during / p99_alone : 0.0);
  std::printf("| the log's fsyncs, appends during the four transfers | %s; %s |\n", slow_count(fsync_before, fsync_after).c_str(),
              slow_count(append_before, append_after).c_str());
  b.stop();
  return rc;
}
