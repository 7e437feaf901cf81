// batond's restart time on a large log (docs/benchmarks.md):
//   restart_bench [EVENTS] [JOBS_IN_FLIGHT]   default 10000000 2000
// Writes a log of EVENTS events through the core's own decide/apply, shaped like a long MD
// campaign: 256 workers run jobs that checkpoint every few minutes (most events are
// checkpoints), JOBS_IN_FLIGHT queued at any time, new ones submitted as others complete.
// Then, as batond does at a clean stop, a state snapshot of the final world. Then starts the
// real batond on it and times start-up to serving (the port file written): with the snapshot,
// and (RESTART_BENCH_FULL=1) after deleting it, from sequence 1.
// RESTART_BENCH_KILL=1: restarts after `kill -9` instead (bench/peers/restart.sh): the snapshot
// is the one a running batond would have written last at worst, snapshot_every_events (100,000,
// the default) before the end; batond is started once and killed with SIGKILL once it serves,
// then each timed start is ended by SIGKILL too, so each one recovers from a killed process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/log_builder.hpp"
#include "core/app/decide.hpp"
#include "core/world/world_snapshot.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"

using namespace baton;
using bench::log_builder;
using bench::uuid_of;
namespace C = core::commands;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// Starts batond on data_dir; seconds until it serves (its port file exists). Then stops it
// (SIGTERM, a clean stop) or kills it (SIGKILL, as a crash would).
double time_start(const std::string& data_dir, const std::string& work, int stop_signal = SIGTERM) {
  std::string port_file = work + "/port";
  fs::remove(port_file);
  // The SQL view off: a log written here has no view, and batond would build one from sequence 1
  // before serving (minutes at 10,000,000 events, bench/view_bench). After a real clean stop the
  // view's offset is the log's head and it has nothing to catch up (docs/benchmarks.md).
  std::ofstream(work + "/batond.yaml") << "projections: {sqlite: false}\n";
  auto t = clock_type::now();
  pid_t pid = fork();
  if (pid == 0) {
    std::string log = work + "/batond.log";
    freopen(log.c_str(), "w", stderr);
    setenv("BATON_CONFIG", (work + "/batond.yaml").c_str(), 1);
    setenv("BATON_API_TOKEN", "bench-token-0123456789abcdef", 1);
    execl(BATOND_PATH, BATOND_PATH, "--data-dir", data_dir.c_str(), "--listen", "127.0.0.1:0", "--port-file", port_file.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  while (!fs::exists(port_file)) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      std::fprintf(stderr, "batond exited during start-up; see %s/batond.log\n", work.c_str());
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  double secs = seconds_since(t);
  kill(pid, stop_signal);
  waitpid(pid, nullptr, 0);
  return secs;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t target = argc > 1 ? std::stoull(argv[1]) : 10'000'000;
  const size_t in_flight = argc > 2 ? std::stoul(argv[2]) : 2000;
  const size_t workers = 256;
  std::string work = (fs::temp_directory_path() / ("restart_bench." + std::to_string(getpid()))).string();
  std::string data = work + "/data";
  fs::create_directories(data);
  const bool kill_mode = std::getenv("RESTART_BENCH_KILL") != nullptr;
  const uint64_t snapshot_behind = kill_mode ? 100000 : 0;  // event_log.snapshot_every_events's default
  log_builder b(data + "/eventlog");
  // The state snapshot of the world so far, as batond writes one.
  uint64_t snapshot_seq = 0;
  size_t snapshot_bytes = 0;
  double snapshot_seconds = 0;
  auto take_snapshot = [&] {
    b.flush();
    const uint64_t last = b.store->last_seq();
    auto head = b.store->read(last, 1).front();
    auto t1 = clock_type::now();
    auto bytes = core::encode_world_snapshot(b.w, head.hash);
    b.store->put_snapshot(core::world_snapshot_name, {last, bytes});
    snapshot_seq = last;
    snapshot_bytes = bytes.size();
    snapshot_seconds = seconds_since(t1);
  };
  auto admin = core::principal::operator_named("admin");
  auto t0 = clock_type::now();
  b.run(core::principal::loop(), C::recalculate_priorities{});
  std::vector<std::string> ids;
  for (size_t i = 0; i < workers; ++i) {
    C::register_worker reg;
    reg.new_id = uuid_of('w', i);
    reg.gpu_model = "A100";
    reg.credential_sha256 = "00";
    b.run(core::principal::operator_named("admin"), reg);
    ids.push_back(reg.new_id);
  }
  std::vector<std::string> held(workers);
  std::vector<int> checkpoints_left(workers, 0);
  size_t next_job = 0;
  while (b.written < target) {
    while (b.w.queued.size() < in_flight) {
      C::create_job c;
      c.id = uuid_of('j', next_job++);
      c.title = "md";
      c.input_bundle_path = "/b";
      b.run(admin, c);
    }
    for (size_t i = 0; i < workers && b.written < target; ++i) {
      if (snapshot_behind && !snapshot_seq && b.written + snapshot_behind >= target) take_snapshot();
      b.now += 1'000'000;
      b.leases.touch(ids[i], b.now);
      auto me = core::principal::of_worker(ids[i]);
      if (held[i].empty()) {
        auto o = b.run(me, C::request_job{ids[i]});
        auto* a = std::get_if<core::results::poll_answer>(&o.answer.value);
        if (!a || !a->assigned) continue;
        held[i] = a->assigned->job_id;
        checkpoints_left[i] = 30 + static_cast<int>(next_job % 20);
        b.run(me, C::start_job{held[i]});
      } else if (checkpoints_left[i]-- > 0) {
        core::checkpoint_report r;
        r.manifest_path = "/scratch/ck/" + held[i] + "/" + std::to_string(checkpoints_left[i]) + ".json";
        r.progress = 1.0 - checkpoints_left[i] / 50.0;
        r.seconds = 12.5;
        b.run(me, C::checkpoint_job{held[i], r});
      } else {
        b.run(me, C::complete_job{held[i]});
        held[i].clear();
      }
    }
  }
  if (!snapshot_seq) take_snapshot();
  b.flush();
  const uint64_t last = b.store->last_seq();
  std::printf(
      "log: %llu events, %zu jobs (%zu queued), %zu workers, written in %.0f s; snapshot at sequence %llu, "
      "%zu bytes in %.2f s\n",
      static_cast<unsigned long long>(last), b.w.jobs.size(), b.w.queued.size(), workers, seconds_since(t0),
      static_cast<unsigned long long>(snapshot_seq), snapshot_bytes, snapshot_seconds);
  b.store->flush();
  b.store.reset();

  if (kill_mode) {
    // A start writes a snapshot of its own once it has caught up; each timed start gets the
    // builder's one back (the later ones deleted), so each replays the same events after it.
    auto drop_later_snapshots = [&] {
      auto store = events::event_store::open(data + "/eventlog");
      for (auto seq : store->snapshot_seqs(core::world_snapshot_name))
        if (seq > snapshot_seq) store->delete_snapshot(core::world_snapshot_name, seq);
    };
    std::printf("batond start-up to serving, first start (then kill -9): %.2f s\n", time_start(data, work, SIGKILL));
    for (int round = 0; round < 3; ++round) {
      drop_later_snapshots();
      std::printf("batond start-up to serving after kill -9: %.2f s\n", time_start(data, work, SIGKILL));
    }
  }
  for (int round = 0; round < (kill_mode ? 0 : 3); ++round)
    std::printf("batond start-up to serving, with the snapshot: %.2f s\n", time_start(data, work));
  std::string log = work + "/batond.log";
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("recovered") != std::string::npos || line.find("caught up") != std::string::npos)
      std::printf("  %s\n", line.c_str());
  if (std::getenv("RESTART_BENCH_FULL")) {
    {
      auto store = events::event_store::open(data + "/eventlog");
      for (auto seq : store->snapshot_seqs(core::world_snapshot_name)) store->delete_snapshot(core::world_snapshot_name, seq);
    }
    std::printf("batond start-up to serving, no snapshot (from sequence 1): %.2f s\n", time_start(data, work));
  }
  fs::remove_all(work);
  return 0;
}
