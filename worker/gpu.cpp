#include "worker/gpu.hpp"

#include <chrono>
#include <sstream>

#include "core/util/process.hpp"
#include "core/util/text.hpp"

namespace baton::worker {

std::optional<gpu_info> parse_nvidia_smi(const std::string& text) {
  gpu_info g;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // name, memory[, driver]: split at the last commas (a name never ends in "MiB").
    auto comma = line.rfind(',');
    if (comma == std::string::npos) continue;
    std::string driver;
    auto last = util::trimmed(line.substr(comma + 1));
    if (last.find("MiB") == std::string::npos) {
      auto before = comma == 0 ? std::string::npos : line.rfind(',', comma - 1);
      if (before == std::string::npos) continue;
      driver = last;
      line.resize(comma);
      comma = before;
    }
    auto name = util::trimmed(line.substr(0, comma));
    auto mem = util::trimmed(line.substr(comma + 1));
    double mib = 0;
    try {
      mib = std::stod(mem);  // "81920 MiB"
    } catch (const std::exception&) {
      continue;
    }
    if (name.empty()) continue;
    if (g.count++ == 0) {
      g.model = name;
      g.driver_version = driver;
      g.vram_gb = static_cast<double>(static_cast<long>(mib / 1024.0 + 0.5));
    }
  }
  if (g.count == 0) return std::nullopt;
  return g;
}

std::optional<gpu_info> query_nvidia_smi() {
  auto r = util::run({"nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"}, "",
                     std::chrono::seconds(30), util::secret_env_names());
  if (r.not_started || r.timed_out || r.exit_code != 0) return std::nullopt;
  return parse_nvidia_smi(r.out);
}

gpu_choice choose_gpus(const std::optional<gpu_info>& detected, const gpu_info& settings, bool allow_no_gpu) {
  gpu_choice c;
  if (detected) {
    c.gpu = *detected;
    return c;
  }
  c.gpu = settings;
  if (settings.count >= 1) return c;
  if (allow_no_gpu) {
    c.gpu.count = 0;
    c.warnings.push_back(
        "no nvidia-smi (or it found no GPU) and no --gpu-count: registering with 0 GPUs (--allow-no-gpu); "
        "batond gives such a worker no job, as every job asks for at least one GPU");
    return c;
  }
  c.problem =
      "no nvidia-smi (or it found no GPU) and no GPU count: give --gpu-count N (BATON_GPU_COUNT) for the GPUs "
      "this machine has, or --allow-no-gpu (BATON_ALLOW_NO_GPU=1) to register with 0 GPUs, which gets no job";
  return c;
}

}  // namespace baton::worker
