#include "eval/account.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>

#include "gpu/cupti_format.h"

namespace kgym {

namespace {

enum Class { kCorrectness, kTimed, kChecks, kHarness, kTransfers, kLoad, kClasses };

Class ClassOf(const gpu::TimelineOp& op, uint64_t first_tagged_ns, const RequiredCalls& req) {
  const uint32_t phase = kgym_tag_phase(op.tag);
  const int64_t call = kgym_tag_call(op.tag);
  switch (phase) {
    case KGYM_PHASE_NONE:
      if (op.start_ns < first_tagged_ns) return kLoad;
      return op.kind == gpu::OpKind::kMemcpy && op.name != "Memcpy DtoD" ? kTransfers : kHarness;
    case KGYM_PHASE_CORRECTNESS:
      return call < static_cast<int64_t>(req.default_trial.size()) && req.default_trial[call] ? kCorrectness : kChecks;
    case KGYM_PHASE_TIMING:
      return call >= req.first_call && call < int64_t{req.first_call} + req.timed_calls ? kTimed : kChecks;
    case KGYM_PHASE_WARMUP:
    case KGYM_PHASE_HARNESS:
      return kHarness;
    default:  // detection, bursts, profile
      return kChecks;
  }
}

double Part(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

nlohmann::json GpuWork::ToJson() const {
  if (!known) return {{"known", false}};
  const double req = Required(), chk = Checking();
  return {{"known", true},
          {"required_s", req},
          {"checking_s", chk},
          {"checking_share", req > 0 ? chk / req : 0.0},
          {"parts_s",
           {{"correctness", correctness_s},
            {"timed", timed_s},
            {"checks", checks_s},
            {"harness", harness_s},
            {"transfers", transfers_s},
            {"load", load_s}}}};
}

GpuWork GpuWorkOf(const gpu::KernelTimeline& t, const RequiredCalls& req) {
  uint64_t first_tagged = std::numeric_limits<uint64_t>::max();
  for (const auto& op : t.ops())
    if (op.tag != 0) first_tagged = std::min(first_tagged, op.start_ns);
  std::array<std::vector<std::pair<uint64_t, uint64_t>>, kClasses> spans;
  for (const auto& op : t.ops()) spans[ClassOf(op, first_tagged, req)].emplace_back(op.start_ns, op.end_ns);
  auto s = [&](Class c) { return static_cast<double>(gpu::UnionLengthNs(spans[c])) / 1e9; };
  GpuWork w;
  w.known = true;
  w.correctness_s = s(kCorrectness);
  w.timed_s = s(kTimed);
  w.checks_s = s(kChecks);
  w.harness_s = s(kHarness);
  w.transfers_s = s(kTransfers);
  w.load_s = s(kLoad);
  return w;
}

nlohmann::json AccountFromMetadata(const nlohmann::json& md) {
  nlohmann::json wall = nlohmann::json::object();
  const nlohmann::json phases = md.value("phase_s", nlohmann::json::object());
  for (const auto& [name, v] : phases.items())
    if (v.is_number()) wall[name] = v.get<double>();
  // load: the worker's start apart from the job's.
  if (wall.contains("load")) {
    const double start = std::min(Part(md, "worker_start_s"), wall["load"].get<double>());
    wall["worker_start"] = start;
    wall["load"] = wall["load"].get<double>() - start;
  }
  // timing: the lock's wait, the freezing, the hold, the kept fetches, and the rest.
  nlohmann::json hold_parts = nlohmann::json::object();
  if (wall.contains("timing")) {
    const nlohmann::json lock = md.value("timing_lock", nlohmann::json::object());
    const double total = wall["timing"].get<double>();
    const std::pair<const char*, double> parts[] = {{"lock_wait", Part(lock, "wait_s")},
                                                    {"freeze", Part(lock, "freeze_s")},
                                                    {"hold", Part(lock, "hold_s")},
                                                    {"kept_fetch", Part(md, "timing_kept_fetch_s")},
                                                    {"timing_sets", Part(md, "timing_pool_s")},
                                                    {"timing_prepare", Part(md, "timing_prepare_s")},
                                                    {"timeline_fetch", Part(md, "timeline_fetch_s")},
                                                    {"finish", Part(md, "finish_s")}};
    double left = total;
    wall.erase("timing");
    for (const auto& [name, s] : parts) {
      const double p = std::clamp(s, 0.0, std::max(left, 0.0));
      wall[name] = p;
      left -= p;
    }
    wall["timing_other"] = left;
    hold_parts = lock.value("hold", nlohmann::json::object());
  }
  double sum = 0;
  for (const auto& [k, v] : wall.items()) sum += v.get<double>();
  nlohmann::json a = {{"wall_s", sum}, {"wall", wall}, {"frozen_s", Part(md, "frozen_s")}};
  if (!hold_parts.empty()) a["hold_parts"] = hold_parts;
  a["gpu"] = md.value("gpu_work", nlohmann::json{{"known", false}});
  if (md.contains("reference_gpu_s")) a["reference_gpu_s"] = md["reference_gpu_s"];
  a["reference_made_here"] = md.value("reference_made_here", false);
  return a;
}

void AddToAccount(nlohmann::json* md, const char* part, double seconds) {
  if (!md->contains("account") || !(*md)["account"].is_object()) return;
  auto& a = (*md)["account"];
  a["wall"][part] = seconds;
  a["wall_s"] = a.value("wall_s", 0.0) + seconds;
}

}  // namespace kgym
