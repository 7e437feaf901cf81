// Black-box tests of the batond executable: real process, real HTTP on an ephemeral
// loopback port, real RocksDB in a temp dir.
#include <httplib.h>
#include <gtest/gtest.h>

#include <fstream>

#include <grp.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include "events/event_store.hpp"
#include "support/store_tampering.hpp"
#include "support/batond_process.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using nlohmann::json;

namespace {

// Environment that keeps a developer's own config and secrets out of the test.
std::vector<std::string> clean_env(const test::temp_dir& dir) {
  return {"BATON_CONFIG=/dev/null", "BATON_DATA_DIR=", "BATON_LISTEN=", "BATON_LOG_LEVEL="};
}

struct running_batond {
  std::unique_ptr<test::child_process> proc;
  int port = 0;
};

running_batond start(const test::temp_dir& dir, const std::string& data_dir, std::vector<std::string> extra_args = {},
                     const std::vector<std::string>& extra_env = {}) {
  std::string port_file = dir / "port";
  std::filesystem::remove(port_file);
  std::vector<std::string> argv = {BATOND_PATH, "--data-dir", data_dir, "--listen", "127.0.0.1:0", "--port-file", port_file};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  running_batond b;
  auto env = clean_env(dir);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  b.proc = std::make_unique<test::child_process>(argv, dir / "batond", env);
  for (int i = 0; i < 1000 && !std::filesystem::exists(port_file); ++i) {
    if (b.proc->wait(std::chrono::milliseconds(10)) != -1) break;  // exited early
  }
  auto text = test::slurp(port_file);
  if (!text.empty()) b.port = std::stoi(text);
  return b;
}

std::optional<json> healthz(int port) {
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Get("/healthz");
  if (!res || res->status != 200) return std::nullopt;
  return json::parse(res->body);
}

int stop(running_batond& b) {
  b.proc->signal(SIGTERM);
  return test::exit_code(b.proc->wait());
}

// Runs batond with arguments that should make it refuse to start; returns exit code and stderr.
std::pair<int, std::string> run_to_exit(const test::temp_dir& dir, std::vector<std::string> args,
                                        std::vector<std::string> env = {}) {
  args.insert(args.begin(), BATOND_PATH);
  auto full_env = clean_env(dir);
  full_env.insert(full_env.end(), env.begin(), env.end());
  test::child_process p(args, dir / "refused", full_env);
  int code = test::exit_code(p.wait());
  return {code, p.err()};
}

// The last line of stderr, where the fatal error is.
std::string last_line(const std::string& s) {
  auto t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

}  // namespace

TEST(Batond, ServesHealthzAndKeepsSequenceAcrossRestarts) {
  test::temp_dir dir;
  std::string data = dir / "data";
  auto b = start(dir, data);
  ASSERT_GT(b.port, 0) << b.proc->err();
  auto h = healthz(b.port);
  ASSERT_TRUE(h);
  EXPECT_EQ((*h)["status"], "ok");
  EXPECT_FALSE((*h)["version"].get<std::string>().empty());
  EXPECT_EQ((*h)["last_sequence"], 2);  // the priority policy, recorded before serving; daemon.started
  httplib::Client cli("127.0.0.1", b.port);
  auto missing = cli.Get("/no/such/route");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["error"], "not_found");
  EXPECT_EQ(stop(b), 0) << b.proc->err();

  auto again = start(dir, data);
  ASSERT_GT(again.port, 0) << again.proc->err();
  EXPECT_EQ((*healthz(again.port))["last_sequence"], 4);  // policy, started, stopped, started (the policy is unchanged)
  EXPECT_EQ(stop(again), 0);

  auto [code, err] = run_to_exit(dir, {"--data-dir", data, "--verify"});
  EXPECT_EQ(code, 0) << err;
  auto store = events::event_store::open(data + "/eventlog");
  auto evs = store->read(1, 10);
  ASSERT_EQ(evs.size(), 5u);
  EXPECT_EQ(evs[0].type, "scheduler.priorities_recalculated");
  EXPECT_EQ(evs[1].type, "daemon.started");
  EXPECT_EQ(evs[2].type, "daemon.stopped");
  EXPECT_EQ(evs[4].type, "daemon.stopped");
  EXPECT_EQ(evs[3].stream_version, 3u);
  EXPECT_GE(evs[2].recorded_at_us, evs[1].recorded_at_us);
  EXPECT_EQ(store->projection_offset("world_snapshots"), 5u) << "recorded at the clean stop, after daemon.stopped";
}

TEST(Batond, NoticesAnUncleanPreviousRun) {
  test::temp_dir dir;
  std::string data = dir / "data";
  auto b = start(dir, data);
  ASSERT_GT(b.port, 0);
  b.proc->signal(SIGKILL);
  b.proc->wait();
  auto again = start(dir, data);
  ASSERT_GT(again.port, 0) << again.proc->err();
  EXPECT_EQ((*healthz(again.port))["last_sequence"], 3);  // policy, started; started
  EXPECT_NE(again.proc->err().find("did not stop cleanly"), std::string::npos);
  EXPECT_EQ(stop(again), 0);
  auto [code, out] = run_to_exit(dir, {"--data-dir", data, "--dump", "--from", "3", "--limit", "1"});
  EXPECT_EQ(code, 0);
  test::child_process dump({BATOND_PATH, "--data-dir", data, "--dump", "--from", "3", "--limit", "1"}, dir / "dump",
                           clean_env(dir));
  ASSERT_EQ(test::exit_code(dump.wait()), 0);
  auto line = json::parse(dump.out());
  EXPECT_EQ(line["seq"], 3);
  EXPECT_EQ(line["payload"]["previous_run_stopped_cleanly"], false);
}

// A config file named by --config or BATON_CONFIG that is not there (a typo, a path on an
// unmounted filesystem) once meant a warning and the built-in defaults: another port, another
// data directory. It stops batond with exit code 2 naming the file and who named it; only
// the default path may be absent.
TEST(Batond, AMissingConfigFileThatWasNamedStopsWithExitCode2NamingIt) {
  test::temp_dir dir;
  const std::string typo = dir / "batnd.yaml";
  auto [code, err] = run_to_exit(dir, {"--config", typo, "--data-dir", dir / "data"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find(typo), std::string::npos) << err;
  EXPECT_NE(err.find("--config"), std::string::npos) << err;
  auto [env_code, env_err] = run_to_exit(dir, {"--data-dir", dir / "data"}, {"BATON_CONFIG=" + typo});
  EXPECT_EQ(env_code, 2) << env_err;
  EXPECT_NE(env_err.find(typo), std::string::npos) << env_err;
  EXPECT_NE(env_err.find("BATON_CONFIG"), std::string::npos) << env_err;
  EXPECT_FALSE(std::filesystem::exists(dir / "data")) << "it stopped before touching anything";

  // The default path (~/.config/baton/config.yaml) absent: built-in defaults, with a warning.
  const std::string home = dir / "home";
  std::filesystem::create_directories(home);
  auto b = start(dir, dir / "data", {}, {"BATON_CONFIG=", "HOME=" + home});
  ASSERT_GT(b.port, 0) << b.proc->err();
  EXPECT_TRUE(healthz(b.port));
  EXPECT_EQ(stop(b), 0);
  EXPECT_NE(b.proc->err().find(home + "/.config/baton/config.yaml not found"), std::string::npos) << b.proc->err();
}

TEST(Batond, ConfigWithAWrongTypeStopsWithExitCode2NamingKeyAndFile) {
  test::temp_dir dir;
  std::string cfg = dir / "bad.yaml";
  std::ofstream(cfg) << "listen:\n  port: abc\n";
  auto [code, err] = run_to_exit(dir, {"--config", cfg, "--data-dir", dir / "data"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("listen.port"), std::string::npos) << err;
  EXPECT_NE(err.find(cfg), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(std::filesystem::exists(dir / "data")) << "refused config still created the data dir";
}

TEST(Batond, UnusableDataDirStopsWithExitCode2) {
  test::temp_dir dir;
  // A regular file where the data dir should be.
  std::ofstream(dir / "afile") << "not a directory";
  auto [code, err] = run_to_exit(dir, {"--data-dir", dir / "afile"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(last_line(err).find("afile"), std::string::npos) << err;

  // An event log whose CURRENT file is damaged.
  std::string data = dir / "data";
  auto b = start(dir, data);
  ASSERT_GT(b.port, 0);
  ASSERT_EQ(stop(b), 0);
  std::ofstream(data + "/eventlog/CURRENT", std::ios::trunc) << "garbage\n";
  std::tie(code, err) = run_to_exit(dir, {"--data-dir", data});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(last_line(err).find("cannot open event log"), std::string::npos) << err;
}

// Started under umask 022, into a data dir made earlier with 0755 and a 0644 file in it: every
// directory batond keeps ends up 0700 and every file 0600 (the log, the views, the secrets).
TEST(Batond, DataDirIsPrivateWhateverTheUmask) {
  namespace fs = std::filesystem;
  test::temp_dir dir;
  std::string data = dir / "data";
  fs::create_directories(data + "/slurm-scripts");
  std::ofstream(data + "/slurm-scripts/old.sbatch") << "#!/bin/sh\n";
  fs::permissions(data, fs::perms(0755));
  fs::permissions(data + "/slurm-scripts/old.sbatch", fs::perms(0644));
  mode_t before = ::umask(022);
  auto b = start(dir, data);
  ::umask(before);
  ASSERT_GT(b.port, 0) << b.proc->err();
  ASSERT_EQ(stop(b), 0);
  auto mode = [](const fs::path& p) { return static_cast<int>(fs::status(p).permissions() & fs::perms::all); };
  EXPECT_EQ(mode(data), 0700);
  EXPECT_EQ(mode(data + "/slurm-scripts"), 0700);
  EXPECT_EQ(mode(data + "/slurm-scripts/old.sbatch"), 0600);
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(data)) {
    if (e.is_symlink()) continue;
    EXPECT_EQ(mode(e.path()), e.is_directory() ? 0700 : 0600) << e.path();
    ++files;
  }
  EXPECT_TRUE(fs::exists(data + "/api_token"));
  EXPECT_TRUE(fs::exists(data + "/views.sqlite"));
  EXPECT_GT(files, 10) << "the log's files were looked at";
}

// projections.sqlite_group: that group's members read the SQL view (sqlite3 -readonly, as
// docs/db-views.md shows) and nothing else of the data dir; a group that does not exist stops
// batond at start naming the key.
TEST(Batond, TheSqlViewGroupReadsTheViewAndNothingElse) {
  test::temp_dir dir;
  std::string data = dir / "data";
  std::ofstream(dir / "nogroup.yaml") << "projections: {sqlite_group: no-such-group-here}\n";
  auto [code, err] = run_to_exit(dir, {"--data-dir", data, "--config", dir / "nogroup.yaml"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(last_line(err).find("projections.sqlite_group"), std::string::npos) << err;
  if (::geteuid() != 0) GTEST_SKIP() << "reading as another user needs root";
  const group* users = ::getgrnam("users");
  ASSERT_NE(users, nullptr) << "Debian's group 'users'";
  std::ofstream(dir / "view.yaml") << "projections: {sqlite_group: users}\n";
  auto b = start(dir, data, {"--config", dir / "view.yaml"});
  ASSERT_GT(b.port, 0) << b.proc->err();
  ::chmod(dir.path().c_str(), 0755);
  auto as_member = [&](const std::string& command) {
    const std::string gid = std::to_string(users->gr_gid);
    return std::system(
        ("setpriv --reuid=65534 --regid=" + gid + " --clear-groups -- sh -c '" + command + "' >/dev/null 2>&1").c_str());
  };
  EXPECT_EQ(as_member("sqlite3 -readonly " + data + "/views.sqlite \"SELECT count(*) FROM jobs\""), 0)
      << "a member reads the view";
  EXPECT_NE(as_member("cat " + data + "/api_token"), 0) << "and not the admin token";
  EXPECT_NE(as_member("ls " + data + "/eventlog"), 0) << "nor the log";
  ASSERT_EQ(stop(b), 0);
  // Without the option, the same member reads nothing.
  b = start(dir, data);
  ASSERT_GT(b.port, 0) << b.proc->err();
  EXPECT_NE(as_member("sqlite3 -readonly " + data + "/views.sqlite \"SELECT count(*) FROM jobs\""), 0);
  ASSERT_EQ(stop(b), 0);
}

// A guessable or repeated credential stops batond at start with one line naming it.
TEST(Batond, WeakOrRepeatedSecretsStopWithExitCode2NamingThem) {
  test::temp_dir dir;
  std::string data = dir / "data";
  auto [code, err] = run_to_exit(dir, {"--data-dir", data}, {"BATON_API_TOKEN=a"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(last_line(err).find("BATON_API_TOKEN"), std::string::npos) << err;
  const std::string strong = "0123456789abcdef0123";
  std::tie(code, err) = run_to_exit(dir, {"--data-dir", data}, {"BATON_API_TOKEN=" + strong, "BATON_PILOT_TOKEN=" + strong});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(last_line(err).find("BATON_PILOT_TOKEN"), std::string::npos) << err;
  // The pilot token batond keeps in its data dir, edited to the admin token's value.
  std::filesystem::create_directories(data);
  std::ofstream(data + "/pilot_token") << strong << "\n";
  std::tie(code, err) = run_to_exit(dir, {"--data-dir", data}, {"BATON_API_TOKEN=" + strong});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(last_line(err).find(data + "/pilot_token"), std::string::npos) << err;
}

TEST(Batond, TamperedLogStopsStartupNamingTheEvent) {
  // Start-up verifies the chain from its state snapshot on (the snapshot itself must carry the
  // log's hash at its sequence); --verify checks the whole chain.
  test::temp_dir dir;
  std::string data = dir / "data";
  std::ofstream(dir / "no-snapshots.yaml") << "event_log: {snapshot_every_events: 0}\n";
  auto first = start(dir, data);  // a clean stop leaves a snapshot of everything so far
  ASSERT_GT(first.port, 0);
  ASSERT_EQ(stop(first), 0);
  uint64_t snapshot_seq = 0;
  {
    events::store_options ro;
    ro.read_only = true;
    auto store = events::event_store::open(data + "/eventlog", ro);
    auto snap = store->latest_snapshot("world");
    ASSERT_TRUE(snap.has_value());
    snapshot_seq = snap->seq;
    EXPECT_EQ(snapshot_seq, store->last_seq());
  }
  auto second = start(dir, data, {"--config", dir / "no-snapshots.yaml"});  // events after the snapshot
  ASSERT_GT(second.port, 0);
  ASSERT_EQ(stop(second), 0);
  {
    auto store = events::event_store::open(data + "/eventlog");
    ASSERT_GT(store->last_seq(), snapshot_seq + 1);
    for (uint64_t seq : {uint64_t{2}, snapshot_seq + 1}) {
      auto raw = *baton::test::raw_event(*store, seq);
      raw[raw.size() - 33] ^= 0x01;  // last body byte, hash left as it was
      baton::test::overwrite_event(*store, seq, raw);
    }
  }
  auto [code, err] = run_to_exit(dir, {"--data-dir", data});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(last_line(err).find("event " + std::to_string(snapshot_seq + 1)), std::string::npos) << err;
  std::tie(code, err) = run_to_exit(dir, {"--data-dir", data, "--verify"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("damaged at event 2"), std::string::npos) << err;
}

TEST(Batond, BadCommandLineAndBusyPortExitWith2) {
  test::temp_dir dir;
  auto [code, err] = run_to_exit(dir, {"--no-such-flag"});
  EXPECT_EQ(code, 2) << err;
  std::tie(code, err) = run_to_exit(dir, {"--listen", "nonsense"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("--listen"), std::string::npos);

  auto b = start(dir, dir / "one");
  ASSERT_GT(b.port, 0);
  std::tie(code, err) = run_to_exit(dir, {"--data-dir", dir / "two", "--listen", "127.0.0.1:" + std::to_string(b.port)});
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(last_line(err).find("cannot listen"), std::string::npos) << err;
  // The same data dir twice: RocksDB's lock refuses the second.
  std::tie(code, err) = run_to_exit(dir, {"--data-dir", dir / "one", "--listen", "127.0.0.1:0"});
  EXPECT_EQ(code, 2) << err;
  EXPECT_EQ(stop(b), 0);
}

// --version names the malloc batond runs on: jemalloc in a release build (core/util/allocator.hpp),
// without the huge pages baton-replay asks for (they cost a daemon a third of its resident memory);
// a sanitizer build keeps the sanitizer's.
// A link order that let libc's malloc win would fail here.
TEST(Batond, VersionNamesTheMallocItRunsOn) {
  test::temp_dir dir;
  test::child_process p({BATOND_PATH, "--version"}, dir / "version", clean_env(dir));
  ASSERT_EQ(test::exit_code(p.wait()), 0) << p.err();
  const std::string out = p.out();
  EXPECT_EQ(out.rfind("batond ", 0), 0u) << out;
#ifdef BATON_EXPECT_JEMALLOC
  EXPECT_NE(out.find("(malloc: jemalloc 5."), std::string::npos) << out;
  EXPECT_NE(out.find(", huge pages: default)"), std::string::npos) << out;
#else
  EXPECT_EQ(out.find("jemalloc"), std::string::npos) << out;
  EXPECT_NE(out.find("(malloc: "), std::string::npos) << out;
#endif
}

// batond's own threads carry their role (actors/thread_name.hpp), as `top -H` and perf show them.
TEST(Batond, ItsThreadsAreNamedByRole) {
  test::temp_dir dir;
  auto b = start(dir, dir / "data");
  ASSERT_GT(b.port, 0);
  std::multiset<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(b.proc->pid()) + "/task")) {
    auto name = test::slurp(task.path() / "comm");
    while (!name.empty() && name.back() == '\n') name.pop_back();
    names.insert(name);
  }
  std::string all;
  for (const auto& n : names) all += n + " ";
  for (const char* role : {"log_writer", "log_syncer", "proj:views", "http_io", "storage_gc"})
    EXPECT_EQ(names.count(role), 1u) << role << " in: " << all;
  EXPECT_EQ(names.count("http_pool"), 16u) << all;     // the handler pool (http.threads, 16 by default)
  EXPECT_EQ(names.count("http_transfer"), 4u) << all;  // streamed bodies' disk work (beast_server_options::transfer_threads)
  // Only the main thread and RocksDB's periodic-task timer (which RocksDB leaves unnamed) keep
  // the process's name.
  EXPECT_EQ(names.count("batond"), 2u) << all;
  EXPECT_EQ(stop(b), 0);
}

// An operator checks a live log: the tools open it read-only beside the daemon's write lock
// while requests keep landing, and see a consistent prefix of it.
TEST(Batond, VerifyDumpAndRederiveWorkWhileBatondServesTraffic) {
  test::temp_dir dir;
  std::string data = dir / "data";
  auto b = start(dir, data);
  ASSERT_GT(b.port, 0) << b.proc->err();
  auto token = test::slurp(data + "/api_token");
  while (!token.empty() && token.back() == '\n') token.pop_back();
  std::atomic<bool> done{false};
  std::atomic<int> created{0};
  std::thread traffic([&] {
    httplib::Client cli("127.0.0.1", b.port);
    cli.set_default_headers({{"X-API-Token", token}});
    while (!done) {
      auto r = cli.Post("/jobs", R"({"title":"t","input_bundle_path":"/b"})", "application/json");
      if (r && r->status == 200) ++created;
    }
  });
  auto first_created = [&] {
    for (int i = 0; i < 2000 && created.load() < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return created.load();
  };
  ASSERT_GE(first_created(), 20);
  for (int round = 0; round < 3; ++round) {
    auto [vcode, verr] = run_to_exit(dir, {"--data-dir", data, "--verify"});
    EXPECT_EQ(vcode, 0) << verr;
    test::child_process dump({BATOND_PATH, "--data-dir", data, "--dump", "--from", "1", "--limit", "5"}, dir / "dump",
                             clean_env(dir));
    EXPECT_EQ(test::exit_code(dump.wait()), 0) << dump.err();
    EXPECT_NE(dump.out().find("daemon.started"), std::string::npos);
    auto [rcode, rerr] = run_to_exit(dir, {"--data-dir", data, "--rederive"});
    EXPECT_EQ(rcode, 0) << rerr;
  }
  done = true;
  traffic.join();
  EXPECT_EQ(stop(b), 0) << b.proc->err();
  auto [code, err] = run_to_exit(dir, {"--data-dir", data, "--verify"});
  EXPECT_EQ(code, 0) << err;
}

// With the log's fsync stalled (tests/support/storage_fault_shim.cpp), a worker call whose reply
// waits for durability answers 503 not_durable_yet once http.worker_reply_deadline_ms has
// passed, /healthz still answers, and once the stall ends the daemon serves and stops cleanly.
TEST(Batond, StalledLogSyncAnswersWorkerCalls503AndRecovers) {
  test::temp_dir dir;
  std::string stall = dir / "stall-sync";
  test::batond_process b(dir, "http: {worker_reply_deadline_ms: 500}\n",
                         {std::string("LD_PRELOAD=") + STORAGE_FAULT_SHIM_PATH, "ASAN_OPTIONS=verify_asan_link_order=0",
                          "BATON_TEST_STALL_SYNC_WHILE=" + stall});
  ASSERT_GT(b.port(), 0) << b.err();
  auto op = b.client();
  auto reg = op->Post(
      "/workers/register",
      json{{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}, {"vram_gb", 0}, {"worker_image_key", "default"}}.dump(),
      "application/json");
  ASSERT_TRUE(reg && reg->status == 200) << (reg ? reg->body : "no answer");
  auto worker = json::parse(reg->body);
  std::string worker_id = worker["worker_id"];
  httplib::Headers as_worker = {{"X-Worker-Token", worker["worker_token"].get<std::string>()}};
  const std::string j1 = "00000000-0000-4000-8000-000000000001", j2 = "00000000-0000-4000-8000-000000000002";
  auto job = op->Post("/jobs", json{{"id", j1}, {"title", "t"}, {"input_bundle_path", "/b"}}.dump(), "application/json");
  ASSERT_TRUE(job && job->status == 200) << (job ? job->body : "no answer");

  std::ofstream(stall) << "stall\n";
  auto t0 = std::chrono::steady_clock::now();
  auto poll = op->Post(("/jobs/request?worker_id=" + worker_id).c_str(), as_worker, "", "application/json");
  ASSERT_TRUE(poll) << "no answer while the sync is stalled";
  EXPECT_EQ(poll->status, 503) << poll->body;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_EQ(json::parse(poll->body).value("error", ""), "not_durable_yet") << poll->body;
  EXPECT_TRUE(poll->has_header("Retry-After"));
  auto health = op->Get("/healthz");
  ASSERT_TRUE(health) << "healthz did not answer while the sync is stalled";
  EXPECT_EQ(health->status, 200) << health->body;
  // Polling again while the assignment is still not durable: not told the job yet (were
  // batond to crash now, the job would be queued again and could go to another worker).
  auto early = op->Post(("/jobs/request?worker_id=" + worker_id).c_str(), as_worker, "", "application/json");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 503) << early->body;

  std::filesystem::remove(stall);
  // Its reply was lost to the stall, so the worker asks again and is told the same job.
  auto repoll = op->Post(("/jobs/request?worker_id=" + worker_id).c_str(), as_worker, "", "application/json");
  ASSERT_TRUE(repoll);
  EXPECT_EQ(repoll->status, 200) << repoll->body;
  EXPECT_EQ(json::parse(repoll->body).value("job_id", ""), j1) << repoll->body;
  // The assignment made during the stall becomes durable; the daemon decides as before.
  auto assigned = op->Get(("/jobs/" + j1).c_str());
  ASSERT_TRUE(assigned && assigned->status == 200);
  EXPECT_EQ(json::parse(assigned->body).value("status", ""), "assigned") << assigned->body;
  auto next = op->Post("/jobs", json{{"id", j2}, {"title", "t"}, {"input_bundle_path", "/b"}}.dump(), "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200) << next->body;
  health = op->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(b.stop(), 0) << b.err();
}

// With the SQL view on (the default: the snapshots are taken of its world) and off (they keep
// their own). (projections/world_snapshots.hpp).
void snapshots_every_n_events_let_a_restart_after_a_kill_replay_only_the_tail(const std::string& views);

TEST(Batond, StateSnapshotsEveryNEventsLetARestartAfterAKillReplayOnlyTheTail) {
  snapshots_every_n_events_let_a_restart_after_a_kill_replay_only_the_tail("{sqlite: true}");
}

TEST(Batond, StateSnapshotsOfTheirOwnWorldWhenTheSqlViewIsOff) {
  snapshots_every_n_events_let_a_restart_after_a_kill_replay_only_the_tail("{sqlite: false}");
}

void snapshots_every_n_events_let_a_restart_after_a_kill_replay_only_the_tail(const std::string& views) {
  test::temp_dir dir;
  std::string data = dir / "data";
  std::ofstream(dir / "snapshots.yaml") << "event_log: {snapshot_every_events: 4, snapshots_kept: 2}\nprojections: " << views
                                        << "\n";
  auto b = start(dir, data, {"--config", dir / "snapshots.yaml"});
  ASSERT_GT(b.port, 0);
  std::string token;
  std::getline(std::ifstream(data + "/api_token"), token);
  httplib::Client cli("127.0.0.1", b.port);
  for (int i = 0; i < 10; ++i)
    ASSERT_EQ(
        cli.Post("/jobs", {{"X-API-Token", token}}, json{{"title", "t"}, {"input_bundle_path", "/b"}}.dump(), "application/json")
            ->status,
        200);
  // The projection writes them from durable events, a moment after the replies.
  auto snapshots = [&] {
    events::store_options ro;
    ro.read_only = true;
    auto store = events::event_store::open(data + "/eventlog", ro);
    return std::make_pair(store->snapshot_seqs("world"), store->last_seq());
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (auto now = snapshots(); std::chrono::steady_clock::now() < deadline; now = snapshots()) {
    if (!now.first.empty() && now.first.back() + 4 > now.second) break;  // the last one is at most 3 events behind
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  b.proc->signal(SIGKILL);  // no clean-stop snapshot: the restart must use a periodic one
  b.proc->wait();
  auto [seqs, last] = snapshots();
  ASSERT_FALSE(seqs.empty());
  EXPECT_LE(seqs.size(), 2u) << "only the newest two are kept";
  EXPECT_GT(seqs.back() + 4, last) << "one every 4 events";

  auto again = start(dir, data, {"--config", dir / "snapshots.yaml"});
  ASSERT_GT(again.port, 0);
  EXPECT_NE(test::slurp(dir / "batond.err").find("from the snapshot at event " + std::to_string(seqs.back())), std::string::npos)
      << test::slurp(dir / "batond.err");
  httplib::Client cli2("127.0.0.1", again.port);
  auto jobs = cli2.Get("/jobs?limit=100", {{"X-API-Token", token}});
  ASSERT_TRUE(jobs && jobs->status == 200);
  EXPECT_EQ(json::parse(jobs->body).size(), 10u) << "every acknowledged job is back";
  EXPECT_EQ(stop(again), 0);
}
