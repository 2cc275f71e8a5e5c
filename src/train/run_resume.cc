#include "train/run_resume.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

namespace kgym::train {

namespace fs = std::filesystem;

std::string NewestCheckpoint(const std::string& out_dir) {
  std::error_code ec;
  int64_t best = -1;
  std::string path;
  for (const auto& e : fs::directory_iterator(fs::path(out_dir) / "checkpoints", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step_", 0) != 0 || !fs::exists(e.path() / "kgym_state.json") ||
        !fs::exists(e.path() / "trainer_state.json"))
      continue;
    const int64_t s = std::atoll(name.c_str() + 5);
    if (s > best) best = s, path = e.path().string();
  }
  return path;
}

Status CheckpointStep(const std::string& checkpoint, int64_t* step) {
  std::ifstream in(checkpoint + "/kgym_state.json");
  nlohmann::json st = nlohmann::json::parse(in, nullptr, false);
  if (st.is_discarded() || !st.contains("step") || !st["step"].is_number_integer())
    return Status::InvalidArgument(checkpoint + " is not a kgym train checkpoint (no kgym_state.json)");
  *step = st["step"].get<int64_t>();
  return Status::Ok();
}

Status ForgetStepsAfter(const std::string& out_dir, int64_t step) {
  std::error_code ec;
  for (const char* sub : {"rollouts", "val"}) {
    for (const auto& e : fs::directory_iterator(fs::path(out_dir) / sub, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("step_", 0) == 0 && std::atoll(name.c_str() + 5) > step) fs::remove_all(e.path(), ec);
    }
  }
  const fs::path metrics = fs::path(out_dir) / "metrics.jsonl";
  if (!fs::exists(metrics, ec)) return Status::Ok();
  std::vector<std::string> kept;
  {
    std::ifstream in(metrics);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() <= step)
        kept.push_back(line);
    }
  }
  // Written aside and renamed over: a kill meanwhile leaves the old file or the new one, never half of either.
  const fs::path tmp = fs::path(out_dir) / "metrics.jsonl.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& line : kept) out << line << "\n";
    out.flush();
    if (!out) return Status::IOError("cannot write " + tmp.string());
  }
  fs::rename(tmp, metrics, ec);
  return ec ? Status::IOError("cannot replace " + metrics.string() + ": " + ec.message()) : Status::Ok();
}

}  // namespace kgym::train
