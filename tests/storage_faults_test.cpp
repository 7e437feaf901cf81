// The disk under batond failing, with the real binary: a full disk (a small tmpfs the test
// mounts over the data dir) refuses writes with 503 disk_full while reads go on, drops
// nothing acknowledged and reports nothing refused as done, and resumes by itself when space
// returns; a failing fsync of the write-ahead log (an LD_PRELOAD'ed shim answers EIO) stops
// batond with exit 3 and one line saying why, and it restarts clean. The SQL view on a full
// disk falls behind and catches up from the log by itself.
#include <caf/all.hpp>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>

#include <algorithm>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <thread>

#include "actors/log_writer.hpp"
#include "core/world/world.hpp"
#include "core/world/world_snapshot.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"
#include "projections/sqlite_view.hpp"
#include "support/batond_process.hpp"
#include "support/sql_view.hpp"
#include "support/wait_until.hpp"

using namespace baton;
using namespace baton::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds recovery_deadline{30};

// A tmpfs of `mib` MiB mounted at path (created) for the test's life. Root only: the test
// says so and skips elsewhere (CI runs as root).
class small_filesystem {
 public:
  small_filesystem(const std::string& path, int mib) : path_(path) {
    fs::create_directories(path);
    const std::string options = "size=" + std::to_string(mib) + "m";
    mounted_ = ::mount("tmpfs", path.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!mounted_) why_ = std::string("cannot mount a tmpfs (root only): ") + std::strerror(errno);
  }
  ~small_filesystem() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

  // Writes a file until the filesystem is full (ENOSPC).
  void fill(const std::string& name) {
    std::FILE* f = std::fopen((path_ + "/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::string block(1 << 20, 'x');
    while (std::fwrite(block.data(), 1, block.size(), f) == block.size()) {
    }
    std::fclose(f);
  }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string why_;
};

std::pair<int, json> post(httplib::Client& c, const std::string& path, const json& body, httplib::Headers h = {}) {
  auto r = c.Post(path.c_str(), h, body.dump(), "application/json");
  return r ? std::make_pair(r->status, json::parse(r->body, nullptr, false)) : std::make_pair(0, json());
}

std::pair<int, json> get(httplib::Client& c, const std::string& path) {
  auto r = c.Get(path.c_str());
  return r ? std::make_pair(r->status, json::parse(r->body, nullptr, false)) : std::make_pair(0, json());
}

std::vector<std::string> titles(const json& jobs) {
  std::vector<std::string> out;
  for (const auto& j : jobs) out.push_back(j.value("title", ""));
  std::sort(out.begin(), out.end());
  return out;
}

// Every job title in the log (batond stopped), checked event by event with the hash chain.
std::vector<std::string> titles_in_log(const std::string& data_dir) {
  std::vector<std::string> out;
  auto store = events::event_store::open(data_dir + "/eventlog");
  store->scan(1, 0, true, [&](const events::event_view& v) {
    if (v.type == "job.created") out.push_back(events::from_payload(v.payload).value("title", ""));
    return true;
  });
  std::sort(out.begin(), out.end());
  return out;
}

// A log of n queued jobs written straight into data_dir's event log (batond not running), as
// batond would have recorded them.
void write_jobs(const std::string& data_dir, int n) {
  auto store = events::event_store::open(data_dir + "/eventlog");
  for (int i = 1; i <= n;) {
    std::vector<events::append_command> batch;
    for (; i <= n && batch.size() < 1000; ++i) {
      events::append_command c;
      c.stream_id = "job/j" + std::to_string(i);
      c.recorded_at_us = 1'700'000'000'000'000 + i;
      c.actor = "test";
      c.events.push_back(
          {"job.created", 1,
           events::to_payload(
               json{{"id", "j" + std::to_string(i)}, {"title", "t" + std::to_string(i)}, {"input_bundle_path", "/b"}})});
      batch.push_back(std::move(c));
    }
    for (const auto& r : store->append(batch)) ASSERT_TRUE(r.ok()) << r.message;
  }
}

// The view file's committed offset.
uint64_t view_offset(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'applied_seq'", -1, &st, nullptr);
  uint64_t seq = sqlite3_step(st) == SQLITE_ROW ? std::stoull(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) : 0;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return seq;
}

const std::string shim = std::string("LD_PRELOAD=") + STORAGE_FAULT_SHIM_PATH;
const std::string shim_under_asan = "ASAN_OPTIONS=verify_asan_link_order=0";
constexpr int killed = -1000 - SIGKILL;  // exit_code() of a process that SIGKILL ended
// A rebuild of 12,000 jobs writes about 2,500 pages to the view's WAL (measured with strace):
// about 1,100 to empty the tables (Debian's SQLite zeroes freed pages), the rows in the rest.
// The 2,000th lands after the rebuild's first commits and before its last.
constexpr int kill_at_view_page = 2000;

}  // namespace

TEST(StorageFaults, AFullDiskRefusesWritesKeepsReadsAndResumesByItself) {
  temp_dir dir;
  small_filesystem disk(dir / "data", 64);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  batond_process d{dir, "event_log: {min_free_mb: 16}\n"};
  ASSERT_GT(d.port(), 0) << d.err();
  auto admin = d.client();
  for (auto title : {"before-1", "before-2"})
    ASSERT_EQ(post(*admin, "/jobs", {{"title", title}, {"input_bundle_path", "/b"}}).first, 200);
  auto [reg_status, worker] = post(*admin, "/workers/register", {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}});
  ASSERT_EQ(reg_status, 200) << worker;
  const std::string worker_id = worker["worker_id"];
  const httplib::Headers as_worker{{"X-Worker-Token", worker["worker_token"].get<std::string>()}};
  httplib::Client anon("127.0.0.1", d.port());

  disk.fill("filler");
  // Writes: refused with why, nothing recorded. A job, and a poll that would assign one.
  auto [refused_status, refused] = post(*admin, "/jobs", {{"title", "refused"}, {"input_bundle_path", "/b"}});
  EXPECT_EQ(refused_status, 503) << refused;
  EXPECT_EQ(refused.value("error", ""), "disk_full") << refused;
  EXPECT_NE(refused.value("message", "").find("event_log.min_free_mb"), std::string::npos) << refused;
  EXPECT_NE(refused.value("message", "").find(dir / "data"), std::string::npos) << refused;
  auto [poll_status, poll] = post(anon, "/jobs/request?worker_id=" + worker_id, json::object(), as_worker);
  EXPECT_EQ(poll_status, 503) << poll;
  // Reads go on, and show nothing refused.
  auto [list_status, listed] = get(*admin, "/jobs?limit=100");
  ASSERT_EQ(list_status, 200) << listed;
  EXPECT_EQ(titles(listed), (std::vector<std::string>{"before-1", "before-2"}));
  for (const auto& j : listed) EXPECT_EQ(j.value("status", ""), "queued") << j;
  EXPECT_EQ(get(*admin, "/healthz").first, 200);

  // Space returns: writes resume by themselves.
  fs::remove(dir / "data/filler");
  ASSERT_TRUE(wait_until(
      [&] {
        return post(*admin, "/jobs", {{"title", "after"}, {"input_bundle_path", "/b"}}).first == 200;
      },
      recovery_deadline))
      << d.err();
  auto [assign_status, assigned] = post(anon, "/jobs/request?worker_id=" + worker_id, json::object(), as_worker);
  EXPECT_EQ(assign_status, 200) << assigned;
  EXPECT_TRUE(assigned.contains("job_id")) << assigned;
  // The SQL view holds every job once it has caught up.
  ASSERT_TRUE(wait_until(
      [&] {
        auto [s, h] = get(*admin, "/healthz");
        return s == 200 && h["projections"]["views"].value("lag_events", -1) == 0;
      },
      recovery_deadline))
      << d.err();
  ASSERT_EQ(d.stop(), 0) << d.err();
  EXPECT_NE(d.err().find("the event log refused a write"), std::string::npos) << d.err();
  EXPECT_EQ(titles_in_log(dir / "data"), (std::vector<std::string>{"after", "before-1", "before-2"}));
  // The view wrote what it could not while the disk was full: the same rows as a rebuild.
  rebuild_view(dir / "data/eventlog", dir / "rebuilt.sqlite");
  EXPECT_EQ(dump_view(dir / "data/views.sqlite"), dump_view(dir / "rebuilt.sqlite"));
}

TEST(StorageFaults, AFailingWalSyncStopsBatondWithExit3AndItRestartsClean) {
  temp_dir dir;
  const std::string trigger = dir / "fail-sync";
  batond_process d{dir, "", {shim, "BATON_TEST_FAIL_SYNC_WHILE=" + trigger, shim_under_asan}};
  ASSERT_GT(d.port(), 0) << d.err();
  auto admin = d.client();
  ASSERT_EQ(post(*admin, "/jobs", {{"title", "acknowledged"}, {"input_bundle_path", "/b"}}).first, 200);

  std::ofstream(trigger) << "fail\n";
  auto [status, body] = post(*admin, "/jobs", {{"title", "during"}, {"input_bundle_path", "/b"}});
  EXPECT_NE(status, 200) << "acknowledged a write whose sync failed: " << body;
  const int code = d.wait_exit(std::chrono::milliseconds(60000));
  EXPECT_EQ(code, 3) << d.err();
  const std::string err = d.err();
  EXPECT_NE(err.find("the event log failed (cannot sync the event log: IO error: While fdatasync"), std::string::npos) << err;
  EXPECT_NE(err.find("Input/output error"), std::string::npos) << err;
  EXPECT_EQ(err.find("stopped cleanly"), std::string::npos) << err;

  fs::remove(trigger);
  d.start();
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_NE(d.err().find("did not stop cleanly"), std::string::npos) << d.err();
  auto [list_status, listed] = get(*d.client(), "/jobs?limit=100");
  ASSERT_EQ(list_status, 200);
  auto names = titles(listed);
  // Acknowledged: there. The one answered with an error may be there too (it reached the
  // WAL before its sync failed), as after a crash; it was never reported as done.
  EXPECT_TRUE(std::count(names.begin(), names.end(), "acknowledged") == 1) << listed;
  EXPECT_EQ(post(*d.client(), "/jobs", {{"title", "after"}, {"input_bundle_path", "/b"}}).first, 200);
  EXPECT_EQ(d.stop(), 0) << d.err();
  auto store = events::event_store::open(dir / "data/eventlog");
  EXPECT_TRUE(store->verify().ok);
}

// The view's own file on a full disk: its writes fail, it stays at its last commit while its
// world follows the log, and once there is room it catches up from the log, ending with the
// same rows as a view written in one go.
TEST(StorageFaults, TheSqlViewOnAFullDiskFallsBehindAndCatchesUpFromTheLog) {
  temp_dir dir;
  small_filesystem disk(dir / "views", 8);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  std::shared_ptr<events::event_store> store = events::event_store::open(dir / "log");
  auto append_job = [&](int i) {
    events::append_command c;
    c.stream_id = "job/j" + std::to_string(i);
    c.recorded_at_us = 1'000'000 + i;
    c.actor = "test";
    c.events.push_back({"job.created", 1,
                        events::to_payload(json{
                            {"id", "j" + std::to_string(i)}, {"title", "t" + std::to_string(i)}, {"input_bundle_path", "/b"}})});
    return store->append({c});
  };
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(append_job(i).front().ok());
  const std::string path = dir / "views/views.sqlite";
  projections::sqlite_view view(projections::sqlite_view::open(path, false), core::world{}, store);
  ASSERT_TRUE(view.apply_batch(store->read(1, 5)));
  view.flush();
  EXPECT_EQ(view.stored_seq(), 5u);

  disk.fill("filler");
  for (int i = 6; i <= 400; ++i) ASSERT_TRUE(append_job(i).front().ok());
  for (uint64_t seq = 6; seq <= 400; seq += 50) {
    ASSERT_TRUE(view.apply_batch(store->read(seq, 50)));  // accepted: its world follows
    view.flush();
  }
  EXPECT_EQ(view.applied_seq(), 400u);
  EXPECT_LT(view.stored_seq(), 400u) << "the rows cannot all have been written on a full disk";
  EXPECT_FALSE(view.failure()) << *view.failure();
  EXPECT_TRUE(view.pending());

  fs::remove(dir / "views/filler");
  ASSERT_TRUE(wait_until(
      [&] {
        view.flush();
        return view.stored_seq() == 400u;
      },
      recovery_deadline));
  EXPECT_FALSE(view.pending());
  rebuild_view(dir / "log", dir / "rebuilt.sqlite");
  EXPECT_EQ(dump_view(path), dump_view(dir / "rebuilt.sqlite"));
}

// batond writes a state snapshot at start when none is at the log's head; killed half-way
// through writing it (the write-ahead log record torn), it starts again on the events alone,
// with every job, and writes the snapshot anew.
TEST(StorageFaults, AKillInTheMiddleOfASnapshotWriteLosesNothing) {
  temp_dir dir;
  write_jobs(dir / "data", 3000);  // a snapshot of about 1 MB
  {
    batond_process d{dir, "", {shim, "BATON_TEST_KILL_AT_WRITE=.log:262144:1", shim_under_asan}};
    EXPECT_EQ(d.wait_exit(std::chrono::milliseconds(120000)), killed) << d.err();
    EXPECT_EQ(d.port(), 0) << "served before its snapshot was written";
  }
  batond_process d{dir, ""};
  ASSERT_GT(d.port(), 0) << d.err();
  auto [status, listed] = get(*d.client(), "/jobs?limit=10000");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(listed.size(), 3000u);
  ASSERT_EQ(d.stop(), 0) << d.err();
  auto store = events::event_store::open(dir / "data/eventlog");
  EXPECT_TRUE(store->verify().ok);
  auto snapshot = store->latest_snapshot(core::world_snapshot_name);
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->seq, store->last_seq());
}

// `batond --rebuild-projection views` killed in the middle of a write to the view's file:
// the view is at its last commit, and the next start carries on from there to the same rows
// as a view built in one go.
TEST(StorageFaults, AKillInTheMiddleOfAViewRebuildResumesFromItsLastCommit) {
  temp_dir dir;
  write_jobs(dir / "data", 12000);
  {
    batond_process d{dir, ""};
    ASSERT_GT(d.port(), 0) << d.err();
    ASSERT_EQ(d.stop(), 0) << d.err();
  }
  const std::string view = dir / "data/views.sqlite";
  const uint64_t complete = view_offset(view);
  {
    batond_process d{
        dir,
        "",
        {shim, "BATON_TEST_KILL_AT_WRITE=views.sqlite-wal:4096:" + std::to_string(kill_at_view_page), shim_under_asan},
        {"--rebuild-projection", "views"}};
    EXPECT_EQ(d.wait_exit(std::chrono::milliseconds(120000)), killed) << d.err();
  }
  const uint64_t at_kill = view_offset(view);
  EXPECT_GT(at_kill, 0u) << "killed before the rebuild committed anything: not in the middle";
  EXPECT_LT(at_kill, complete) << "killed after the rebuild: not in the middle";
  {
    batond_process d{dir, ""};
    ASSERT_GT(d.port(), 0) << d.err();
    ASSERT_EQ(d.stop(), 0) << d.err();
  }
  EXPECT_EQ(view_offset(view), events::event_store::open(dir / "data/eventlog")->last_seq());
  rebuild_view(dir / "data/eventlog", dir / "rebuilt.sqlite");
  EXPECT_EQ(dump_view(view), dump_view(dir / "rebuilt.sqlite"));
}

// The log writer after a refusal for want of space: it refuses every append that would write
// until the scheduler unfences it, even once there is room (appends decided on the dropped
// world must not land); an empty append (a reply waiting for what was written before) is
// still answered; after unfence appends are written again.
TEST(StorageFaults, TheLogWriterRefusesEverythingAfterARefusalUntilUnfenced) {
  temp_dir dir;
  small_filesystem disk(dir / "log", 32);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  events::store_options o;
  o.min_free_bytes = uint64_t{8} << 20;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir / "log", o);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto log = actors::spawn_log_writer(sys, store);
  auto append = [&](std::vector<events::append_command> cmds) {
    caf::scoped_actor self{sys};
    std::vector<events::append_result> out;
    self->request(log, caf::infinite, actors::append_atom::value, std::move(cmds))
        .receive([&](std::vector<events::append_result>& r) { out = std::move(r); },
                 [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
    return out;
  };
  auto one = [&](const std::string& stream) {
    events::append_command c;
    c.stream_id = stream;
    c.recorded_at_us = 1;
    c.events.push_back({"t", 1, events::to_payload(json::object())});
    auto r = append({c});
    return r.size() == 1 ? r[0].status : events::append_status::invalid;
  };
  EXPECT_EQ(one("a"), events::append_status::appended);
  disk.fill("filler");
  EXPECT_EQ(one("b"), events::append_status::no_space);
  fs::remove(dir / "log/filler");
  EXPECT_EQ(one("c"), events::append_status::no_space) << "fenced: room again, but not unfenced";
  EXPECT_TRUE(append({}).empty());  // answered, after the sync of what came before
  EXPECT_EQ(store->last_seq(), 1u);
  caf::anon_send(log, actors::unfence_atom::value);
  EXPECT_EQ(one("d"), events::append_status::appended);
  EXPECT_EQ(store->last_seq(), 2u);
  caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
}
