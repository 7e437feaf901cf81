#include "batond/daemon.hpp"

#include <caf/all.hpp>
#include <signal.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <baton/version.hpp>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "actors/cluster.hpp"
#include "actors/log_writer.hpp"
#include "actors/salad.hpp"
#include "actors/scheduler.hpp"
#include "batond/api_token.hpp"
#include "batond/daemon_clock.hpp"
#include "batond/daemon_state.hpp"
#include "core/events/event_types.hpp"
#include "batond/pilot_token_files.hpp"
#include "batond/storage_collector.hpp"
#include "core/world/priority.hpp"
#include "core/util/allocator.hpp"
#include "core/util/time.hpp"
#include "core/world/world.hpp"
#include "core/world/world_snapshot.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"
#include "http/actor_bridge.hpp"
#include "http/api_routes.hpp"
#include "http/beast_server.hpp"
#include "http/blob_routes.hpp"
#include "http/caller.hpp"
#include "http/file_routes.hpp"
#include "http/health_routes.hpp"
#include "http/request_parsing.hpp"
#include "http/storage/local_backend.hpp"
#include "http/storage/s3_backend.hpp"
#include "http/ui_routes.hpp"
#include "projections/chain_anchor.hpp"
#include "actors/caches/idle_poll_view.hpp"
#include "projections/job_history.hpp"
#include "projections/live_feed.hpp"
#include "projections/minute_stats.hpp"
#include "projections/offsets.hpp"
#include "actors/caches/operator_credentials.hpp"
#include "actors/caches/pilot_credential.hpp"
#include "projections/postgres_view.hpp"
#include "projections/runner.hpp"
#include "projections/sqlite_view.hpp"
#include "actors/caches/worker_credentials.hpp"
#include "projections/world_snapshots.hpp"
#include "replay/audit/store_log_reader.hpp"
#include "replay/recovery/world_recovery.hpp"

namespace baton::daemon {
namespace {

// Where blobs live (docs/storage.md): the configured backend.
std::shared_ptr<storage::backend> make_storage_backend(const config::settings& settings) {
  if (settings.storage.backend == "s3") {
    storage::s3_backend::options o;
    o.state_dir = settings.data_dir + "/s3-multipart";  // uploads in progress survive a restart
    if (settings.storage.s3.upload_access_key_id.empty())
      spdlog::warn(
          "storage: uploads are presigned with batond's own S3 key; on a store that accepts unsigned x-amz-* headers "
          "on a presigned URL (Ceph RGW does) an uploader can copy in any object that key reads. Set "
          "storage.s3.upload_access_key_id to a key that may only write (docs/storage.md)");
    return std::make_shared<storage::s3_backend>(settings.storage.s3, o);
  }
  return nullptr;  // local: see below
}

// The shell's clock (batond/daemon_clock.hpp): read here, passed into commands, recorded in
// their events. Set once the log's last recorded time is known, before anything is recorded.
std::unique_ptr<daemon_clock> the_clock;
int64_t now_us() { return the_clock ? the_clock->now_us() : daemon_clock::system_wall_us(); }

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Appends one daemon lifecycle event and waits until it is durable.
bool record(caf::actor_system& sys, const actors::log_writer_actor& log, const core::ev::payload& payload) {
  const std::string type(core::ev::type_of(payload));
  events::append_command c;
  c.stream_id = stream;
  c.recorded_at_us = now_us();
  c.actor = "daemon";
  c.events.push_back({type, core::ev::schema_of(payload), core::ev::encode(payload)});
  auto r = http::ask<std::vector<events::append_result>>(sys, log, std::chrono::seconds(30), actors::append_atom::value,
                                                         std::vector<events::append_command>{c});
  if (!r.value || r.value->empty() || !r.value->front().ok()) {
    spdlog::error("cannot record {}: {}", type, r.value && !r.value->empty() ? r.value->front().message : r.error);
    return false;
  }
  return true;
}

// A policy the log has not recorded (a first start, a changed config) is recorded, durably,
// before batond serves: no job is judged by a policy the log does not know.
bool record_priority_policy(const actors::scheduler_actor& scheduler) {
  core::envelope e{core::principal::loop(), "loop:priority", "start", core::commands::recalculate_priorities{}, {}};
  auto r = actors::submit(scheduler, std::move(e), std::chrono::seconds(30));
  if (!r || r->error) {
    spdlog::critical("cannot record the priority policy: {}", r && r->error ? r->error->message : "no answer in 30 s");
    return false;
  }
  spdlog::info("recorded the priority policy (scheduling.policy and its settings changed or were never recorded)");
  return true;
}

// The log writer stopped with an error (a write or a sync failed): nothing more can be
// promised. Its reason is kept here and the main thread is woken from sigwait to stop.
constexpr int log_failed_signal = SIGUSR1;
std::mutex log_failure_mutex;
std::optional<std::string> log_failure;

void watch_log_writer(const actors::log_writer_actor& log) {
  log->attach_functor([](const caf::error& reason) {
    if (reason == caf::make_error(caf::exit_reason::normal) || reason == caf::make_error(caf::exit_reason::user_shutdown)) return;
    {
      std::lock_guard<std::mutex> lock(log_failure_mutex);
      log_failure = actors::log_error_text(reason);
    }
    ::kill(::getpid(), log_failed_signal);
  });
}

std::optional<std::string> failure_of_log() {
  std::lock_guard<std::mutex> lock(log_failure_mutex);
  return log_failure;
}

// Asks an actor to quit (a null handle: nothing to ask) and lets go of its handle.
template <class Handle>
void stop_actor(Handle& h) {
  if (h) caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  h = nullptr;
}

// The data dir and everything in it: directories 0700, other files 0600 (links not followed).
// With a view group (projections.sqlite_group): the data dir 02710 and the SQL view's files
// 0640, both of that group, so its members can read the view and nothing else (SQLite gives
// the view's -wal and -shm files the database file's mode; the directory's setgid bit, its
// group; every other file stays 0600).
// "" or why it cannot be done.
std::string close_data_dir(const std::string& data_dir, const std::string& view_group) {
  namespace fs = std::filesystem;
  gid_t gid = 0;
  if (!view_group.empty()) {
    const group* g = ::getgrnam(view_group.c_str());
    if (!g) return "config: key 'projections.sqlite_group': no Unix group named '" + view_group + "'";
    gid = g->gr_gid;
  }
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return "cannot create the data dir " + data_dir + ": " + ec.message();
  const bool shared = !view_group.empty();
  auto close = [&](const fs::path& p, bool dir, bool view) {
    auto mode = dir ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write;
    if (view) mode |= dir ? fs::perms::group_exec | fs::perms::set_gid : fs::perms::group_read;
    fs::permissions(p, mode, fs::perm_options::replace, ec);
    if (!ec && view && ::chown(p.c_str(), static_cast<uid_t>(-1), gid) != 0) ec = std::error_code(errno, std::generic_category());
    return !ec;
  };
  if (!close(data_dir, true, shared)) return "cannot make the data dir " + data_dir + " private: " + ec.message();
  for (auto it = fs::recursive_directory_iterator(data_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_symlink(ec)) continue;
    std::error_code ignored;
    const bool view = shared && it.depth() == 0 && it->path().filename().string().rfind("views.sqlite", 0) == 0;
    if (!close(it->path(), it->is_directory(ignored), view))
      return "cannot make " + it->path().string() + " private: " + ec.message();
  }
  if (ec) return "cannot read the data dir " + data_dir + ": " + ec.message();
  // A view made on this start is made with the group's read from the first byte.
  if (shared && !fs::exists(data_dir + "/views.sqlite")) {
    int fd = ::open((data_dir + "/views.sqlite").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0 || ::fchown(fd, static_cast<uid_t>(-1), gid) != 0 || ::fchmod(fd, 0640) != 0) {
      if (fd >= 0) ::close(fd);
      return "cannot give " + data_dir + "/views.sqlite to the group " + view_group + ": " + std::strerror(errno);
    }
    ::close(fd);
  }
  return "";
}

}  // namespace

int run(const config::settings& settings, const run_options& opts) {
  // Block the stop signals before any thread exists so every CAF, RocksDB and HTTP
  // thread inherits the mask and only sigwait below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, log_failed_signal);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // Everything batond writes is its own, whatever umask it was started with: the log, the
  // views, the snapshots and the secrets (0700 directories, 0600 files); a data dir made
  // earlier under a looser umask is closed the same way.
  ::umask(077);
  // Its credentials from the environment, before anything is opened (those it keeps in the
  // data dir are checked once read, below).
  if (auto bad = config::check_secrets({{"BATON_API_TOKEN", settings.api_token},
                                        {"BATON_PILOT_TOKEN", settings.pilot_token},
                                        {"BATON_METRICS_TOKEN", settings.metrics_token}})) {
    spdlog::critical("{}", bad->what());
    return 2;
  }
  if (auto why = close_data_dir(settings.data_dir, settings.sqlite_view ? settings.sqlite_group : ""); !why.empty()) {
    spdlog::critical("{}", why);
    return 2;
  }
  std::string log_dir = settings.data_dir + "/eventlog";
  std::shared_ptr<events::event_store> store;
  daemon_state state;
  core::world world;
  uint64_t recovered_snapshot_seq = 0;
  std::string api_token, pilot_token, pilot_credential;
  std::shared_ptr<pilot_token_files> pilot_files;  // none: the pilot token comes from BATON_PILOT_TOKEN
  try {
    auto started = std::chrono::steady_clock::now();
    events::store_options store_opts;
    store_opts.min_free_bytes = static_cast<uint64_t>(settings.min_free_mb) << 20;
    store = events::event_store::open(log_dir, store_opts);
    // Every job and worker: the newest state snapshot that checks out, then the events after
    // it, the hash chain verified from there (replay/recovery/world_recovery.hpp).
    auto r = replay::recover_world(*store);
    for (const auto& why : r.skipped) spdlog::warn("state snapshot not used: {}", why);
    world = std::move(r.world);
    recovered_snapshot_seq = r.snapshot_seq;
    // Time goes on from the log's last recorded time even if the wall clock was set back.
    const int64_t last_recorded = store->last_seq() ? store->read(store->last_seq(), 1).front().recorded_at_us : 0;
    the_clock = std::make_unique<daemon_clock>(last_recorded);
    // Compared directly: wall_offset_us() reads the two clocks one after the other, so on a
    // healthy restart it is a few microseconds below zero.
    if (const int64_t wall = daemon_clock::system_wall_us(); wall < last_recorded)
      spdlog::warn("the wall clock reads {}, before the log's last event ({}): batond's time goes on from the log's",
                   util::format_time_us(wall), util::format_time_us(last_recorded));
    // batond's own runs: the daemon stream alone, through its index (two events a run).
    for (const auto& e : store->read_stream(stream, 1, SIZE_MAX)) state = evolve(std::move(state), events::view_of(e));
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    spdlog::info(
        "recovered {} events ({} from the snapshot at event {}, {} replayed after it; {} jobs, {} workers) from {} in {} ms "
        "(chain verified from the snapshot on)",
        r.last_seq, r.snapshot_seq, r.snapshot_seq, r.events_applied, world.jobs.size(), world.workers.size(), log_dir,
        ms.count());
    api_token = settings.api_token.empty() ? load_or_create_api_token(settings.data_dir) : settings.api_token;
    // Slurm pilots register with a one-time credential each (actors/cluster.cpp); a RelayMD
    // worker (accept_shared_token) uses the shared token for everything, so its pilots read
    // that from this file. The batch script names only a file, never a secret. A copy of the
    // pilot token an earlier version left here is removed: nothing reads it any more.
    if (!settings.clusters.empty() && settings.accept_shared_token)
      pilot_credential = std::filesystem::absolute(settings.data_dir + "/pilot_credential").string();
    else
      std::remove((settings.data_dir + "/pilot_credential").c_str());
    if (settings.pilot_token.empty()) {
      pilot_files = std::make_shared<pilot_token_files>(settings.data_dir);
      pilot_files->settle(world.pilot_token);
      pilot_token = load_or_create_pilot_token(settings.data_dir);
      if (!world.pilot_token.sha256.empty() && world.pilot_token.sha256 != http::hash_of(pilot_token))
        spdlog::warn(
            "{}/pilot_token is not the pilot token the log's last rotation recorded: pilots reading it are refused "
            "(rotate it again: baton pilot-token rotate)",
            settings.data_dir);
    } else {
      pilot_token = settings.pilot_token;
      if (!world.pilot_token.sha256.empty())
        spdlog::warn("BATON_PILOT_TOKEN is set: it is the pilot token, and the rotations the log recorded are not used");
    }
    if (!pilot_credential.empty()) write_secret_file(pilot_credential, api_token);
    // Again with the ones read from the data dir's files, named by their paths.
    auto where = [&](const std::string& from_env, const char* var, const char* file) {
      return from_env.empty() ? settings.data_dir + "/" + file : std::string(var);
    };
    if (auto bad = config::check_secrets({{where(settings.api_token, "BATON_API_TOKEN", "api_token"), api_token},
                                          {where(settings.pilot_token, "BATON_PILOT_TOKEN", "pilot_token"), pilot_token},
                                          {"BATON_METRICS_TOKEN", settings.metrics_token}}))
      throw std::runtime_error(bad->key + ": " + bad->message);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 2;
  }
  bool previous_clean = !state.running;
  if (!previous_clean)
    spdlog::warn("the previous run (version {}) did not stop cleanly; its acknowledged events are intact", state.last_version);

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", settings.actor_threads);
  // One shared queue with a condition variable: work-stealing workers poll and nanosleep
  // when idle, which on 2 cores took CPU from the HTTP threads (+20 % assigning polls/s).
  cfg.set("scheduler.policy", caf::atom("sharing"));
  int exit_code = 0;
  std::shared_ptr<projections::job_history> history;
  std::shared_ptr<projections::world_snapshots> snapshots;
  {
    caf::actor_system sys{cfg};
    auto log_metrics = std::make_shared<actors::log_metrics>();  // fsync and append latencies, for GET /metrics
    actors::log_writer_options log_opts;
    log_opts.max_batch_events = static_cast<size_t>(settings.group_commit_max_events);
    log_opts.metrics = log_metrics;
    auto log = actors::spawn_log_writer(sys, store, log_opts);
    watch_log_writer(log);
    // Job histories are read from the log's stream index when asked: nothing to rebuild.
    history = std::make_shared<projections::job_history>(store);
    // Chain anchors (projections/chain_anchor.hpp): the head found at start, then one every
    // anchor_interval_minutes while events come.
    projections::running_projection anchor_run;
    std::shared_ptr<projections::chain_anchor> anchors;
    if (settings.anchor_interval_minutes > 0) {
      anchors = std::make_shared<projections::chain_anchor>(
          settings.data_dir + "/anchors.jsonl", static_cast<int64_t>(settings.anchor_interval_minutes) * 60'000'000, now_us);
      if (uint64_t head = store->last_seq()) {
        auto last = store->read(head, 1);
        if (!last.empty()) anchors->anchor(head, last.front().hash, now_us());
      }
      anchors->resume_from(store->last_seq());
      anchor_run = projections::run_projection(sys, log, anchors);
    }
    // State snapshots (projections/world_snapshots.hpp). When events were replayed after the
    // last snapshot, the recovered world is encoded and written first, so the next start
    // replays nothing. Then the SQL view's world is lent to them (below), or, without the
    // view, they keep their own copy of the world, decoded from the snapshot at the log's head.
    projections::running_projection snapshot_run;
    struct {
      bool wanted = false;
      uint64_t head = 0;
      std::string hash, bytes;
    } snap;
    if (settings.snapshot_every_events > 0) {
      try {
        snap.head = store->last_seq();
        snap.hash = snap.head ? store->read(snap.head, 1).front().hash : std::string();
        if (snap.head > recovered_snapshot_seq) {
          snap.bytes = core::encode_world_snapshot(world, snap.hash);
          projections::world_snapshots::put_keeping(*store, {snap.head, snap.bytes},
                                                    static_cast<size_t>(settings.snapshots_kept));
        }
        snap.wanted = true;
      } catch (const std::exception& e) {
        spdlog::error("state snapshots are off for this run: {}", e.what());
      }
    }
    // The SQL view (projections/sqlite_view.hpp): it resumes after the offset it committed with
    // its rows, on the world as it was there, and is caught up before batond serves.
    projections::running_projection view_run;
    std::shared_ptr<projections::sqlite_view> view;
    auto view_off = [&](const std::string& why) {  // batond serves on without it
      spdlog::error("the SQL view is off for this run: {}", why);
      stop_actor(view_run.actor);
      view.reset();
    };
    if (settings.sqlite_view) {
      try {
        auto started = std::chrono::steady_clock::now();
        const std::string path = settings.data_dir + "/views.sqlite";
        auto opened = projections::sqlite_view::open(path, opts.rebuild_views);
        if (opened.applied > store->last_seq()) {  // rows of events this log does not have: not this log's view
          spdlog::warn("the SQL view {} holds events up to {}, the log ends at {}: rebuilding it", path, opened.applied,
                       store->last_seq());
          opened.db.reset();
          opened = projections::sqlite_view::open(path, true);
        } else if (!opened.rebuilt.empty()) {
          spdlog::warn("the SQL view {} is rebuilt from event 1: {}", path, opened.rebuilt);
        }
        const uint64_t from = opened.applied;
        core::world at = from == 0 ? core::world{} : replay::recover_world(*store, from).world;
        view = std::make_shared<projections::sqlite_view>(std::move(opened), std::move(at), store);
        view_run = projections::run_projection(sys, log, view, {true, true});
        if (auto why = projections::wait_caught_up(view_run, *view, std::chrono::hours(1))) {
          view_off("it did not catch up: " + *why);
        } else {
          auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
          spdlog::info("SQL view {} caught up at event {} ({} applied in {} ms)", path, view->applied_seq(),
                       view->applied_seq() - from, ms.count());
        }
      } catch (const std::exception& e) {
        view_off(e.what());
      }
    }
    if (snap.wanted) {
      try {
        const auto every = static_cast<uint64_t>(settings.snapshot_every_events);
        const auto keep = static_cast<size_t>(settings.snapshots_kept);
        if (view) {
          snapshots = std::make_shared<projections::world_snapshots>(store, projections::world_snapshots::lent, snap.head,
                                                                     snap.hash, every, keep);
          view->feed_snapshots(snapshots);
        } else {
          if (snap.bytes.empty() && snap.head > 0)  // after a clean stop: the one recovery loaded
            if (auto at_head = store->snapshot_at_or_before(core::world_snapshot_name, snap.head);
                at_head && at_head->seq == snap.head)
              snap.bytes = std::move(at_head->data);
          if (snap.bytes.empty()) snap.bytes = core::encode_world_snapshot(world, snap.hash);
          snapshots = std::make_shared<projections::world_snapshots>(store, core::decode_world_snapshot(snap.bytes).w, snap.head,
                                                                     snap.hash, every, keep);
          snapshot_run = projections::run_projection(sys, log, snapshots, {true, true});
        }
      } catch (const std::exception& e) {
        spdlog::error("state snapshots are off for this run: {}", e.what());
        snapshots.reset();
      }
      snap.bytes.clear();
    }
    // The PostgreSQL view (projections/postgres_view.hpp): from the log's head on, with the
    // world recovered there; it catches its database up from the log now if it can, else it
    // retries by itself while batond serves.
    projections::running_projection pg_run;
    std::shared_ptr<projections::postgres_view> pg;
    if (!settings.postgres_dsn.empty()) {
      try {
        const uint64_t head = store->last_seq();
        pg = std::make_shared<projections::postgres_view>(
            projections::postgres_options{settings.postgres_dsn, settings.postgres_password, opts.rebuild_postgres}, store,
            head == 0 ? core::world{} : replay::recover_world(*store, head).world, head);
        pg->sync_now();
        pg_run = projections::run_projection(sys, log, pg, {true, true});
      } catch (const std::exception& e) {
        spdlog::error("the PostgreSQL view is off for this run: {}", e.what());
        pg.reset();
      }
    }
    core::scheduler_settings sched;
    sched.liveness.stale_after_us =
        static_cast<core::time_us>(settings.heartbeat_interval_seconds * settings.heartbeat_timeout_multiplier * 1e6);
    sched.heartbeat_interval_seconds = settings.heartbeat_interval_seconds;
    sched.reap_interval_us = static_cast<core::time_us>(settings.reaper_interval_seconds) * 1'000'000;
    sched.max_attempts = static_cast<uint32_t>(settings.max_attempts);
    sched.default_worker_image = settings.default_worker_image;
    sched.extra_worker_images = settings.worker_images;
    sched.worker_credentials_required = !settings.accept_shared_token;
    sched.liveness.grace_from_us = now_us();
    for (const auto& c : settings.clusters) sched.clusters.push_back(actors::spec_of(c));
    sched.hpc_silent_cap_us = 5 * sched.liveness.stale_after_us;
    sched.salad_enabled = settings.salad.enabled();
    sched.salad_image = settings.salad.worker_image_key.empty() ? settings.default_worker_image : settings.salad.worker_image_key;
    sched.salad_max_replicas = settings.salad.max_replicas;
    sched.priority = settings.priority;
    for (const auto& c : settings.clusters)
      sched.priority.offered_gpu_count =
          std::max<uint32_t>(sched.priority.offered_gpu_count, static_cast<uint32_t>(std::max(0, c.gpu_count)));
    // Salad and an UNLIMITED partition give no wall time: then no time limit is too long.
    bool every_site_limited = !settings.clusters.empty() && !settings.salad.enabled();
    for (const auto& c : settings.clusters) {
      every_site_limited = every_site_limited && c.wall_time_seconds > 0;
      sched.priority.offered_wall_seconds = std::max(sched.priority.offered_wall_seconds, c.wall_time_seconds);
    }
    if (!every_site_limited) sched.priority.offered_wall_seconds = 0;
    sched.deadlines = settings.deadlines;
    sched.backfill = settings.backfill;
    sched.storage.user_quota_bytes = static_cast<uint64_t>(settings.storage.user_quota_bytes);
    sched.storage.keep_checkpoints = static_cast<uint32_t>(settings.storage.keep_checkpoints);
    sched.storage.unclaimed_upload_seconds = int64_t{settings.storage.unclaimed_upload_hours} * 3600;
    core::lease_table leases;
    if (previous_clean) leases.insert(state.saved_leases.begin(), state.saved_leases.end());
    bool record_policy = !core::policy_recorded(world, sched.priority);
    // The live feed (GET /events/stream, the dashboard): from the log's head on, knowing whose
    // the jobs already in it are.
    std::unordered_map<std::string, std::string> job_users(world.jobs.size());
    world.jobs.for_each_unordered([&](const core::job& j) { job_users.emplace(j.id, j.user); });
    auto feed = std::make_shared<projections::live_feed>(std::move(job_users), store->last_seq());
    auto feed_run = projections::run_projection(sys, log, feed);
    // Per-minute counts (GET /stats/minutes, the dashboard's overview): rebuilt from event 1 at
    // every start, on a thread of its own so a long log's catch-up holds no scheduler thread;
    // not waited for (the route answers 503 until it has the log's end).
    auto minutes = std::make_shared<projections::minute_stats>();
    auto minutes_run = projections::run_projection(sys, log, minutes, {true, false});
    auto idle_view = std::make_shared<caches::idle_poll_view>(sched);
    auto credentials = std::make_shared<caches::worker_credentials>();
    auto operator_tokens = std::make_shared<caches::operator_credentials>();
    auto pilot = std::make_shared<caches::pilot_credential>(
        core::pilot_configured{http::hash_of(pilot_token), !settings.pilot_token.empty()});
    actors::scheduler_storage storage;
    storage.recover = [store] { return replay::recover_world(*store).world; };
    storage.short_of_space = [store] { return store->short_of_space(); };
    auto scheduler = actors::spawn_scheduler(sys, log, std::move(world), std::move(leases), sched, now_us,
                                             {idle_view, credentials, operator_tokens, pilot}, std::move(storage));
    if (record_policy && !record_priority_policy(scheduler)) exit_code = 2;
    auto request_counts = std::make_shared<http::request_counters>();
    std::vector<std::shared_ptr<const projections::projection>> reported;
    if (view) reported.push_back(view);
    if (pg) reported.push_back(pg);
    if (snapshots) reported.push_back(snapshots);
    reported.push_back(feed);  // (every log-fed projection: none may stop unseen)
    reported.push_back(minutes);
    if (anchors) reported.push_back(anchors);
    http::api_context api;
    api.scheduler = scheduler;
    api.api_token = api_token;
    api.history = history;
    api.minutes = minutes;
    api.idle_view = idle_view;
    api.clock = now_us;
    api.pilot = pilot;
    if (pilot_files)
      api.pilot_secrets = {[pilot_files](const std::string& secret) { pilot_files->stage(secret); },
                           [pilot_files] { pilot_files->commit(); }, [pilot_files] { pilot_files->discard(); }};
    api.credentials = credentials;
    api.accept_shared_token = !sched.worker_credentials_required;
    api.operators = operator_tokens;
    api.limiter = std::make_shared<http::rate_limiter>(http::rate_limits{settings.operator_requests, settings.worker_requests});
    api.log = replay::store_log_reader(store);
    api.log_fed = reported;
    api.log_metrics = log_metrics;
    api.requests = request_counts;
    api.polls = std::make_shared<actors::poll_metrics>();
    api.slurm_calls = std::make_shared<actors::slurm_call_counters>();
    api.cluster_cycles = std::make_shared<actors::cluster_cycle_counters>();
    api.scrape_token = settings.metrics_token;
    api.sessions = std::make_shared<http::ui_sessions>();
    api.login_limits = std::make_shared<http::login_failures>(settings.login_failures);
    api.streams = std::make_shared<http::stream_slots>(settings.event_streams_per_operator);
    api.feed = feed;
    api.https = settings.tls.enabled();
    // Blobs (docs/storage.md): the local backend's bytes travel through batond's /blobs/... routes;
    // S3's go straight to the store with presigned URLs.
    std::shared_ptr<storage::local_backend> local_blobs;
    if (settings.storage.backend == "local") {
      storage::local_options blob_opts;
      blob_opts.data_dir = settings.data_dir;
      blob_opts.min_free_bytes = static_cast<uint64_t>(settings.min_free_mb) << 20;
      blob_opts.on_corrupt = [scheduler](const std::string& sha256, const std::string& found) {
        core::envelope e{core::principal::loop(), "loop:storage", {}, core::commands::blob_corrupt{sha256, found}, {}};
        actors::submit_async(scheduler, std::move(e), [](core::reply) {});
      };
      try {
        local_blobs = storage::local_backend::open(blob_opts);
      } catch (const std::exception& e) {
        spdlog::critical("{}", e.what());
        exit_code = 2;
      }
      api.storage = local_blobs;
      if (local_blobs)
        api.transfer_counts = std::shared_ptr<const storage::transfer_counters>(local_blobs, &local_blobs->counters());
    } else {
      api.storage = make_storage_backend(settings);
    }
    api.transfers = std::make_shared<http::transfer_book>();
    api.transfer_ttl_seconds =
        settings.storage.backend == "s3" ? settings.storage.s3.url_expiry_seconds : settings.storage.transfer_expiry_seconds;
    std::unique_ptr<batond::storage_collector> collector;
    if (api.storage)
      collector = std::make_unique<batond::storage_collector>(scheduler, api.storage,
                                                              std::chrono::seconds(settings.storage.collect_interval_seconds));
    http::beast_server_options server_opts;
    server_opts.host = settings.listen.host;
    server_opts.port = settings.listen.port;
    server_opts.handler_threads = settings.http_threads;
    server_opts.max_requests_per_connection = settings.keep_alive_max;
    server_opts.read_timeout_seconds = settings.http_read_timeout_seconds;
    server_opts.idle_timeout_seconds = settings.http_idle_timeout_seconds;
    server_opts.max_connections = settings.http_max_connections;
    server_opts.max_buffered_request_bytes = static_cast<size_t>(settings.http_max_buffered_request_bytes);
    server_opts.async_reply_deadline_ms = settings.http_worker_reply_deadline_ms;
    server_opts.unauthenticated_timeout_seconds = settings.http_unauthenticated_timeout_seconds;
    server_opts.max_unauthenticated_per_address = settings.http_max_unauthenticated_per_address;
    // The same check the routes make, on the head alone (a credential is all headers).
    server_opts.authenticates = [api](const http::request& head) {
      http::response ignored;
      return http::identify(api, head, ignored).has_value();
    };
    server_opts.tls_cert_file = settings.tls.cert_file;
    server_opts.tls_key_file = settings.tls.key_file;
    server_opts.counters = request_counts;
    http::beast_server server(server_opts);
    http::add_error_handlers(server.routes());
    http::add_health_routes(server.routes(), sys, log, scheduler, reported, [] {
      const int64_t now = now_us(), wall = daemon_clock::system_wall_us();
      return nlohmann::json{{"time", util::format_time_us(now)},
                            {"wall_clock", util::format_time_us(wall)},
                            {"wall_clock_offset_seconds", static_cast<double>(wall - now) / 1e6}};
    });
    http::add_api_routes(server.routes(), api);
    http::add_ui_routes(server.routes(), api);
    if (local_blobs) http::add_blob_routes(server.routes(), api, local_blobs);
    int port = 0;
    if (exit_code != 0) {
      // the policy could not be recorded (logged above)
    } else {
      try {
        port = server.start();
      } catch (const std::exception& e) {
        spdlog::critical("{}", e.what());
        exit_code = 2;
      }
    }
    if (exit_code == 0) {
      core::ev::daemon_started started;
      started.version = baton::version;
      started.pid = static_cast<int64_t>(getpid());
      started.host = hostname();
      started.listen = settings.listen.host + ":" + std::to_string(port);
      started.data_dir = settings.data_dir;
      started.config = settings.source;
      started.previous_run_stopped_cleanly = previous_clean;
      record(sys, log, started);
      std::vector<actors::cluster_actor> clusters;
      std::map<std::string, std::shared_ptr<actors::slurm_call_budget>> budgets;  // by ssh host ("" = local)
      for (const auto& c : settings.clusters) {
        actors::cluster_options o;
        o.cluster = c;
        o.daemon_url = settings.provisioning.daemon_url.empty()
                           ? std::string(settings.tls.enabled() ? "https://" : "http://") +
                                 (settings.listen.host == "0.0.0.0" ? hostname() : settings.listen.host) + ":" +
                                 std::to_string(port)
                           : settings.provisioning.daemon_url;
        o.api_token_file = pilot_credential;
        if (!settings.accept_shared_token) {
          o.pilot_credential_dir = settings.provisioning.pilot_credential_dir.empty()
                                       ? std::filesystem::absolute(settings.data_dir + "/pilot-credentials").string()
                                       : settings.provisioning.pilot_credential_dir;
          o.new_secret = [] { return http::new_secret_hex(); };
        }
        o.scripts_dir =
            settings.provisioning.scripts_dir.empty() ? settings.data_dir + "/slurm-scripts" : settings.provisioning.scripts_dir;
        o.interval = std::chrono::seconds(settings.provisioning.interval_seconds);
        // One budget per Slurm controller: the partitions reached through the same host share it.
        auto& budget = budgets[c.ssh_host];
        if (!budget)
          budget = std::make_shared<actors::slurm_call_budget>(
              core::bucket_rule{settings.provisioning.slurm_calls_burst, settings.provisioning.slurm_calls_per_second});
        o.budget = budget;
        o.calls = api.slurm_calls;
        o.cycles = api.cluster_cycles;
        o.heartbeat_seconds = settings.heartbeat_interval_seconds;
        o.new_id = [] { return http::new_uuid(); };
        o.clock = now_us;
        clusters.push_back(actors::spawn_cluster(sys, scheduler, std::move(o)));
      }
      if (!clusters.empty()) spdlog::info("provisioning on {} Slurm cluster entries", clusters.size());
      actors::salad_actor salad;
      if (settings.salad.enabled()) salad = actors::spawn_salad(sys, scheduler, settings.salad);
      if (!opts.port_file.empty()) {
        std::ofstream(opts.port_file + ".tmp") << port << "\n";
        std::rename((opts.port_file + ".tmp").c_str(), opts.port_file.c_str());
      }
      spdlog::info("batond {} listening on {}:{} (data in {})", baton::version, settings.listen.host, port, settings.data_dir);
      // While batond serves, this thread waits for a stop signal and, every 30 s, hands the
      // heap freed since back to the OS (recovery's buffers first): the allocator keeps freed
      // pages in its arenas, so RSS would follow the high-water mark of every arena instead
      // of what batond holds.
      int sig = 0;
      const timespec trim_every{30, 0};
      for (;;) {
        sig = sigtimedwait(&stop_signals, nullptr, &trim_every);
        if (sig < 0) {
          if (errno == EAGAIN) {
            util::release_free_memory();
            if (local_blobs) local_blobs->sweep(now_us());  // uploads nobody resumed for a day
          }
          continue;
        }
        if (sig != log_failed_signal || failure_of_log()) break;
      }
      const auto failure = failure_of_log();
      if (failure) {
        spdlog::critical(
            "the event log failed ({}): batond stops, nothing more is acknowledged; a restart recovers "
            "every acknowledged event from the log",
            *failure);
        exit_code = 3;
      } else {
        spdlog::info("received {}, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      }
      for (auto& c : clusters) caf::anon_send_exit(c, caf::exit_reason::user_shutdown);  // after its current cycle
      clusters.clear();
      stop_actor(salad);
      server.stop();  // in-flight requests finish; their appends are answered before this returns
      if (!failure) {
        // The last heartbeats go into the stop event, so a restart shows them unchanged.
        auto leases = http::ask<core::lease_table>(sys, scheduler, std::chrono::seconds(10), actors::leases_atom::value);
        core::ev::daemon_stopped stopped;
        stopped.signal = sig == SIGTERM ? "SIGTERM" : "SIGINT";
        stopped.worker_last_heartbeats_us = leases.value.value_or(core::lease_table{});
        record(sys, log, stopped);
      }
    }
    if (anchors && exit_code == 0)  // the head at a clean stop (daemon.stopped is durable: it was acknowledged)
      if (auto last = store->read(store->last_seq(), 1); !last.empty())
        anchors->anchor(last.front().seq, last.front().hash, now_us());
    stop_actor(anchor_run.actor);
    stop_actor(feed_run.actor);
    stop_actor(minutes_run.actor);
    if (pg && exit_code == 0) pg->wait_applied(store->last_seq(), std::chrono::steady_clock::now() + std::chrono::seconds(30));
    stop_actor(pg_run.actor);
    if (pg) pg->flush();                // (serialised with the projection's own thread)
    if (snapshots && exit_code == 0 &&  // a clean stop: a snapshot of everything, so the next start replays nothing
        snapshots->wait_applied(store->last_seq(), std::chrono::steady_clock::now() + std::chrono::seconds(30))) {
      if (!snapshots->is_lent())
        snapshots->write_now();
      else if (view)
        view->write_snapshot_now();  // (the view's world, under its lock)
    }
    stop_actor(snapshot_run.actor);
    if (view && exit_code == 0)  // a clean stop: the view holds every event (it keeps its offset itself)
      view->wait_applied(store->last_seq(), std::chrono::steady_clock::now() + std::chrono::seconds(30));
    stop_actor(view_run.actor);
    if (view) try {
        view->flush();  // (serialised with the projection's own thread)
      } catch (const std::exception& e) {
        spdlog::error("the SQL view could not commit its last events: {}", e.what());
      }
    stop_actor(scheduler);
    stop_actor(log);  // the writer flushes what is parked, then quits
  }                   // ~actor_system waits for every actor
  try {
    // The log writer has stopped, so the offset may be written from here (projections/offsets.hpp).
    // Not after the log failed: RocksDB is then in an error state, and the restart replays.
    if (snapshots && exit_code != 3) projections::record_offset(*store, *snapshots);
    if (exit_code != 3) store->flush();
  } catch (const events::store_error& e) {
    spdlog::warn("{}", e.what());
  }
  store.reset();
  if (exit_code == 0) spdlog::info("stopped cleanly");
  return exit_code;
}

}  // namespace baton::daemon
