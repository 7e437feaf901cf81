#include "actors/cluster.hpp"
#include "actors/thread_name.hpp"
#include "core/util/sha256.hpp"
#include "core/util/time.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "events/bytes.hpp"
#include "slurm/cluster_client.hpp"
#include "slurm/sbatch_script.hpp"

namespace baton::actors {
namespace {

using nlohmann::json;

struct cluster_state {
  cluster_state() = default;  // user-declared: CAF builds a state constructible from its actor pointer from `this`
  int failures = 0;           // consecutive failed submissions
  int skip_cycles = 0;        // submission cycles left to skip (backoff); reaping still runs
  static inline const char* name = "cluster";
};

slurm::target target_of(const config::cluster_config& c) {
  slurm::target t;
  t.ssh_host = c.ssh_host;
  t.ssh_user = c.ssh_user;
  t.ssh_port = c.ssh_port;
  t.ssh_key_file = c.ssh_key_file;
  t.ssh_options = c.ssh_options;
  t.submit_timeout = std::chrono::seconds(c.submit_timeout_seconds);
  t.query_timeout = std::chrono::seconds(c.query_timeout_seconds);
  return t;
}

class cycle_runner {
 public:
  cycle_runner(const scheduler_actor& scheduler, const cluster_options& o) : scheduler_(scheduler), o_(o) {}

  // Returns false when a submission failed.
  bool run(bool submit) {
    reap_dead_placeholders();
    return !submit || submit_for_demand();
  }

 private:
  // Sends a report or question to the scheduler; the typed result, or nullopt after logging why.
  std::optional<core::result> ask(core::command cmd) {
    core::envelope e{core::principal::loop(), "loop:cluster/" + o_.cluster.name, {}, std::move(cmd), {}};
    auto r = submit(scheduler_, std::move(e), std::chrono::seconds(30));
    if (!r || r->error) {
      spdlog::warn("cluster {}: scheduler refused a report: {}", o_.cluster.name,
                   r ? r->error->code + ": " + r->error->message : "no answer");
      return std::nullopt;
    }
    return std::move(r->value);
  }

  // One sbatch or squeue call may go out now; when the budget is spent, says so once a cycle.
  bool may_call_slurm(const char* what) {
    if (!o_.budget || o_.budget->take(o_.clock())) return true;
    if (!budget_reported_)
      spdlog::warn("cluster {}: Slurm call budget spent ({} per second); {} waits for the next cycle", o_.cluster.name,
                   "see provisioning.slurm_calls_per_second", what);
    budget_reported_ = true;
    return false;
  }

  void counted(const char* command, bool ok) {
    if (o_.calls) o_.calls->count({o_.cluster.name, command, ok ? "ok" : "failed"});
  }

  void reap_dead_placeholders() {
    auto r = ask(core::commands::cluster_placeholders{o_.cluster.name});
    auto* watch = r ? std::get_if<core::results::cluster_watch>(&*r) : nullptr;
    if (!watch) return;
    const auto& ids = watch->placeholder_slurm_ids;
    const auto& stale = watch->stale_slurm_ids;
    if (ids.empty() && stale.empty()) return;
    auto all = ids;
    all.insert(all.end(), stale.begin(), stale.end());  // one squeue call for both
    if (!may_call_slurm("squeue")) return;
    auto alive = slurm::query(target_of(o_.cluster), all);
    counted("squeue", alive.has_value());
    if (!alive) {
      spdlog::warn("cluster {}: squeue gave no usable answer; keeping {} placeholders and {} silent workers", o_.cluster.name,
                   ids.size(), stale.size());
      return;
    }
    std::set<std::string> alive_ids;
    for (const auto& [id, state] : *alive) alive_ids.insert(id);
    if (!ids.empty()) ask(core::commands::placeholders_checked{o_.cluster.name, ids, alive_ids});
    if (!stale.empty()) ask(core::commands::stale_allocations_checked{o_.cluster.name, stale, alive_ids});
  }

  bool submit_for_demand() {
    auto r = ask(core::commands::cluster_plan{o_.cluster.name});
    auto* plans = r ? std::get_if<core::results::plans>(&*r) : nullptr;
    if (!plans) return true;
    for (const auto& plan : plans->items)
      for (int i = 0; i < plan.count; ++i) {
        if (!may_call_slurm("sbatch")) return true;              // not a failure: the rest next cycle
        if (!submit_one(plan.image, plan.record)) return false;  // ends the cycle
      }
    return true;
  }

  void report_failure(const std::string& image, const std::string& stage, int exit_code, const std::string& text,
                      const std::string& target) {
    core::commands::submission_failed f;
    f.cluster = o_.cluster.name;
    f.image = image;
    f.stage = stage;
    f.exit_code = exit_code;
    f.stderr_text = text;
    f.target = target;
    ask(std::move(f));
  }

  bool submit_one(const std::string& image, const core::ev::placeholder_plan_record& record) {
    const auto& c = o_.cluster;
    std::string worker_id = o_.new_id();
    slurm::script_values v;
    v.job_name = "baton-" + worker_id.substr(0, 8);
    v.partition = c.partition;
    v.account = c.account;
    v.qos = c.qos;
    v.gres = c.gres.empty() && c.gpu_count > 0
                 ? "gpu:" + (c.gpu_type.empty() ? "" : c.gpu_type + ":") + std::to_string(c.gpu_count)
                 : c.gres;
    v.memory = c.memory;
    v.memory_per_gpu = c.memory_per_gpu;
    v.wall_time = c.wall_time;
    v.log_directory = c.log_directory;
    v.nodes = c.nodes;
    v.ntasks = c.ntasks;
    v.sigterm_margin_seconds = c.sigterm_margin_seconds;
    v.handoff_margin_seconds = c.handoff_margin_seconds;
    v.daemon_url = o_.daemon_url;
    // Each pilot registers with a credential of its own, good once, for this placeholder only:
    // the batch script names its file; batond keeps only its hash.
    std::optional<slurm::secret_file> secret;
    std::string registration_sha256;
    if (!o_.pilot_credential_dir.empty()) {
      const auto dir = c.pilot_credential_dir.empty() ? o_.pilot_credential_dir : c.pilot_credential_dir;
      const auto s = o_.new_secret();
      secret = slurm::secret_file{dir + "/" + worker_id, worker_id + "." + s};
      registration_sha256 = util::sha256_hex(s);
      v.api_token_file = secret->path;
      v.api_token_file_once = true;
    } else {
      v.api_token_file = c.pilot_token_file.empty() ? o_.api_token_file : c.pilot_token_file;
    }
    v.ca_file = c.ca_file;
    v.cluster_name = c.name;
    v.image_key = image;
    v.placeholder_id = worker_id;
    v.worker_command = c.worker_command;
    v.heartbeat_seconds = o_.heartbeat_seconds;
    auto src = c.worker_images.at(image);
    v.apptainer_image = !src.sif_path.empty() ? src.sif_path : src.image_uri;
    auto script = slurm::render_script(c.template_text.empty() ? slurm::default_template : c.template_text, v);
    if (!script.error.empty()) {
      report_failure(image, "render", 0, script.error, "");
      return false;
    }
    save_copy(worker_id, script.text);
    auto out = slurm::submit(target_of(c), script.text, c.log_directory, secret ? &*secret : nullptr);
    counted("sbatch", out.slurm_id.has_value());
    if (!out.slurm_id) {
      spdlog::warn("cluster {}: sbatch failed ({}, exit {}): {}", c.name, out.stage, out.exit_code, out.stderr_text);
      report_failure(image, out.stage, out.exit_code, out.stderr_text, c.ssh_host.empty() ? "local" : c.ssh_host);
      return false;
    }
    spdlog::info("cluster {}: submitted Slurm job {} for image {} (placeholder {})", c.name, *out.slurm_id, image, worker_id);
    ask(core::commands::placeholder_submitted{c.name, worker_id, image, *out.slurm_id, record, registration_sha256});
    return true;
  }

  void save_copy(const std::string& worker_id, const std::string& text) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(o_.scripts_dir, ec);
    auto stamp = util::format_time_us(o_.clock());
    for (auto& ch : stamp)
      if (ch == ':') ch = '-';
    auto path = fs::path(o_.scripts_dir) / (o_.cluster.name + "-" + stamp + "-" + worker_id.substr(0, 8) + ".sbatch");
    std::ofstream out(path);
    out << text;
    if (!out) spdlog::warn("cluster {}: cannot save the script copy {}", o_.cluster.name, path.string());
  }

  const scheduler_actor& scheduler_;
  const cluster_options& o_;
  bool budget_reported_ = false;
};

cluster_actor::behavior_type cluster(cluster_actor::stateful_pointer<cluster_state> self, scheduler_actor scheduler,
                                     cluster_options opts) {
  name_this_thread("slurm:" + opts.cluster.name);
  self->send(self, cycle_atom::value);
  return {
      [self, scheduler, opts](cycle_atom) {
        auto& st = self->state;
        bool submit = st.skip_cycles == 0;
        if (!submit) --st.skip_cycles;
        try {
          if (cycle_runner(scheduler, opts).run(submit)) {
            if (submit) st.failures = 0;
          } else {
            // A broken partition (bad account, sbatch missing) should not write a failure event
            // every cycle: skip 1, 2, 4 ... up to 32 cycles between attempts.
            st.skip_cycles = 1 << std::min(st.failures++, 5);
            spdlog::warn("cluster {}: next submission attempt in {} cycles", opts.cluster.name, st.skip_cycles + 1);
          }
        } catch (const std::exception& e) {  // a malformed reply must not end the actor
          spdlog::error("cluster {}: cycle failed: {}", opts.cluster.name, e.what());
        }
        if (opts.cycles) opts.cycles->count({opts.cluster.name});
        self->delayed_send(self, opts.interval, cycle_atom::value);
      },
  };
}

}  // namespace

bool slurm_call_budget::take(core::time_us now) {
  std::lock_guard<std::mutex> lock(mutex_);
  return !core::take_token(bucket_, rule_, now);
}

core::cluster_spec spec_of(const config::cluster_config& c) {
  core::cluster_spec s;
  s.name = c.name;
  for (const auto& [key, src] : c.worker_images) s.images.push_back(key);
  s.strategy = c.strategy;
  s.jit_threshold_us = static_cast<core::time_us>(c.jit_threshold_hours * 3600e6);
  s.max_pending = c.max_pending_jobs;
  s.gpu_type = c.gpu_type;
  s.gpu_count = c.gpu_count;
  s.wall_time_seconds = c.wall_time_seconds;
  return s;
}

cluster_actor spawn_cluster(caf::actor_system& sys, scheduler_actor scheduler, cluster_options opts) {
  return sys.spawn<caf::detached>(cluster, std::move(scheduler), std::move(opts));
}

}  // namespace baton::actors
