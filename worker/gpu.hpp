#pragma once
// What the worker tells batond about its GPUs.
#include <optional>
#include <string>

namespace baton::worker {

struct gpu_info {
  std::string model;
  int count = 0;
  double vram_gb = 0;  // of the first GPU
  std::string driver_version;  // "" unknown
};

// Parses `nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader`
// output ("NVIDIA A100-SXM4-80GB, 81920 MiB, 535.104.05" per line; the driver column may be
// missing). nullopt if no line parses.
std::optional<gpu_info> parse_nvidia_smi(const std::string& text);

// Runs nvidia-smi; nullopt when it is absent or fails.
std::optional<gpu_info> query_nvidia_smi();

}  // namespace baton::worker
