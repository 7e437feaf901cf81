#pragma once
// What the worker tells batond about its GPUs.
#include <optional>
#include <string>
#include <vector>

namespace baton::worker {

struct gpu_info {
  std::string model;
  int count = 0;
  double vram_gb = 0;          // of the first GPU
  std::string driver_version;  // "" unknown
};

// Parses `nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader`
// output ("NVIDIA A100-SXM4-80GB, 81920 MiB, 535.104.05" per line; the driver column may be
// missing). nullopt if no line parses.
std::optional<gpu_info> parse_nvidia_smi(const std::string& text);

// Runs nvidia-smi; nullopt when it is absent or fails.
std::optional<gpu_info> query_nvidia_smi();

// What to register with: nvidia-smi's answer when there is one, else the GPUs the settings
// name. Every job asks for at least one GPU, so a worker registered with none never gets one;
// without nvidia-smi it registers only when told its count (`settings.count` >= 1, from
// --gpu-count) or allowed none (--allow-no-gpu). `problem` is why it must not start.
struct gpu_choice {
  gpu_info gpu;
  std::vector<std::string> warnings;
  std::string problem;
};
gpu_choice choose_gpus(const std::optional<gpu_info>& detected, const gpu_info& settings, bool allow_no_gpu);

}  // namespace baton::worker
