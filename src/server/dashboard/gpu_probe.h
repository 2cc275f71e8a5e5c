// GpuProbe: memory and utilisation of the machine's NVIDIA GPUs for the dashboard, read from nvidia-smi (at most
// once every 5 s; an empty list when nvidia-smi is missing or fails). Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace kgym::dashboard {

// Rows of `nvidia-smi --query-gpu=index,name,memory.used,memory.total,utilization.gpu,temperature.gpu
// --format=csv,noheader,nounits` as [{"device": "cuda:<index>", "name", "memory_used_mib", "memory_total_mib",
// "utilization_percent", "temperature_c"}]; malformed lines are left out, "[N/A]" values are null.
nlohmann::json ParseNvidiaSmi(const std::string& csv);

class GpuProbe {
 public:
  nlohmann::json Read();

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point read_at_{};
  nlohmann::json last_ = nlohmann::json::array();
};

}  // namespace kgym::dashboard
