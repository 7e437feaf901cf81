#pragma once
// The worker's lifecycle: register, heartbeat (with cancel checks) on its own thread, poll for
// jobs on the main thread, run each job, hand it off on SIGTERM, deregister at the end.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

#include "worker/api_client.hpp"
#include "worker/config.hpp"
#include "worker/gpu.hpp"
#include "worker/transfer.hpp"

namespace baton::worker {

class checkpoint_store;
struct job_spec;

// How one assignment ended, as far as the main loop cares.
enum class job_outcome {
  finished,    // complete or fail reported (or queued for a retry)
  cancelled,   // payload stopped; the next poll closes the cancel
  lost,        // batond no longer counts this worker (404) or the job moved on: register again
  handed_off,  // SIGTERM or the allocation ends: checkpointed and handed back; the worker exits
  preempted,   // another job needs this worker: checkpointed and handed back; the worker polls again
  refused,     // not started (bad bundle, failed restore...), reported as failed
};

class agent {
 public:
  agent(worker_config cfg, gpu_info gpu);
  // Returns the process exit code.
  int run();
  // Called by the signal thread on SIGTERM/SIGINT.
  void request_stop();

 private:
  // --- lifecycle (agent.cpp) ---
  bool register_worker();
  void reset_session();  // deregister (best effort) and register again
  int poll_loop();
  bool flush_pending_report();
  session current_session();
  bool stopping();
  bool lost();
  // Seconds until the proactive handoff margin starts (deadline - margin - now); +inf without a
  // deadline, <= 0 once inside the margin.
  double seconds_until_handoff() const;
  bool inside_handoff_margin() const { return seconds_until_handoff() <= 0; }
  // Waits up to `seconds`; false if interrupted by stop, a cancel of the running job or a lost session.
  bool interruptible_sleep(double seconds);

  // --- heartbeat thread (heartbeat.cpp) ---
  void heartbeat_loop();
  void send_heartbeat(api_client& api);
  void rotate_credential(api_client& api);  // when cfg_.credential_rotate_seconds have passed
  // Acts on a "preempt" object from batond for the running job `job`: hand off, or stop.
  void note_preemption(const std::string& job, const nlohmann::json& preempt);

  // --- one job (job_run.cpp) ---
  job_outcome run_job(const nlohmann::json& assignment);
  job_outcome refuse_job(const std::string& job_id, const std::string& reason, const std::string& detail);
  // Stores changed checkpoint files and reports a new manifest; false if batond says the job moved on.
  bool checkpoint_cycle(const std::string& job_id, checkpoint_store& store, const std::string& workdir, const job_spec& spec,
                        bool final);
  void finish_report(const std::string& job_id, const std::string& action, const nlohmann::json& body);

  // --- stored-bundle jobs: bundle, checkpoints and outputs as blobs (stored_job.cpp) ---
  // batond's data plane with this worker's credential; `interruptible`: a stop or cancel ends
  // the waits between retries.
  xfer::link blob_link(bool interruptible);
  struct refusal {
    std::string reason, detail;
  };
  // GET /jobs/{id}/files into `listing`, then the bundle downloaded, checked against
  // `wanted` (the poll's input_bundle) and unpacked into workdir (which must not exist).
  std::optional<refusal> fetch_stored_bundle(const std::string& job_id, const nlohmann::json& wanted, const std::string& workdir,
                                             nlohmann::json& listing);
  // The latest checkpoint of `listing` (if any) downloaded, each file's digest checked, and
  // restored into workdir through the store. Throws std::runtime_error naming the file.
  bool restore_stored_checkpoint(const std::string& job_id, const nlohmann::json& listing, checkpoint_store& store,
                                 const std::string& workdir);
  // Sends the store's current manifest as a checkpoint file set. True once committed; false
  // (kept for the next cycle) when batond or the store cannot be reached; `lost` set when
  // batond says the job is not this worker's any more.
  bool store_checkpoint_set(const std::string& job_id, const checkpoint_store& store, const nlohmann::json& report, bool final,
                            bool& lost);
  // The files matching output_globs as the job's outputs; "" once committed, else why not.
  std::string store_outputs(const std::string& job_id, int attempt, const std::string& workdir, const job_spec& spec);
  // Stops nothing: sends handoff/start (with reason and extra fields) and handoff/complete.
  void report_handoff(const std::string& job_id, const checkpoint_store& store, const std::string& progress_path,
                      nlohmann::json start);

  worker_config cfg_;
  gpu_info gpu_;
  api_client api_;  // main thread only

  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool heartbeat_quit_ = false;
  session session_;
  std::string lost_worker_id_;  // a heartbeat for this id got 404
  std::string job_id_;          // the running job, for heartbeats
  std::string progress_path_;
  std::string cancel_job_id_;  // control said cancellation_requested for this job
  // A heartbeat or control reply said this job is preempted in requeue mode: hand it off by
  // preempt_grace_until_ (epoch seconds), then take the next job.
  std::string preempt_job_id_, preempted_by_;
  double preempt_grace_until_ = 0;

  struct pending_report {
    std::string job_id, action;
    nlohmann::json body;
  };
  std::optional<pending_report> pending_;  // a complete/fail that did not get through yet

  // The running job's checkpoints, when its bundle is a stored blob: they go to batond's file
  // sets; `unsent` while the local manifest holds a change that is not stored yet.
  struct stored_checkpoints {
    bool on = false;
    int attempt = 0;
    bool unsent = false;
    std::string set_id;  // the last committed set
  } stored_;
};

}  // namespace baton::worker
