// baton-worker: registers with batond, runs the jobs it is given, checkpoints them to the
// shared filesystem and hands them on when stopped. See worker/README.md.
#include <signal.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "worker/agent.hpp"
#include "worker/config.hpp"
#include "worker/credential_guard.hpp"
#include "worker/gpu.hpp"

using namespace baton::worker;

int main(int argc, char** argv) {
  // Before any secret is read: a payload under this account may not read this process's
  // memory or start-up environment (worker/credential_guard.hpp).
  const bool undumpable = make_undumpable();
  worker_config cfg;
  auto rc = parse_args(argc, argv, cfg);
  wipe_credentials(argc, argv);  // the token is in cfg now, and nowhere a payload can look
  if (rc) return *rc;

  auto logger = spdlog::stderr_logger_mt("baton-worker");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ baton-worker[%P] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));
  spdlog::flush_on(spdlog::level::trace);
  if (!undumpable) spdlog::warn("prctl(PR_SET_DUMPABLE, 0) failed: payloads under this account may read this process's memory");

  // Block the stop signals before any thread exists; one thread takes them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto detected = query_nvidia_smi();
  if (detected)
    spdlog::info("nvidia-smi: {} x {} ({} GB, driver {})", detected->count, detected->model, detected->vram_gb,
                 detected->driver_version.empty() ? "unknown" : detected->driver_version);
  auto chosen = choose_gpus(detected, {cfg.gpu_model, cfg.gpu_count, cfg.vram_gb, cfg.driver_version}, cfg.allow_no_gpu);
  for (const auto& w : chosen.warnings) spdlog::warn("{}", w);
  if (!chosen.problem.empty()) {
    spdlog::error("{}", chosen.problem);
    return 2;
  }
  const gpu_info gpu = chosen.gpu;
  if (!detected && gpu.count > 0)
    spdlog::info("no nvidia-smi; GPUs from settings: {} x {} ({} GB)", gpu.count, gpu.model.empty() ? "unnamed" : gpu.model,
                 gpu.vram_gb);

  agent a(cfg, gpu);
  std::thread([&a, stop_signals] {
    int sig = 0;
    while (sigwait(&stop_signals, &sig) == 0) {
      spdlog::info("received {}; finishing up", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      a.request_stop();
    }
  }).detach();
  return a.run();
}
