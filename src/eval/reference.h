// Reference data of one task configuration: the inputs of every correctness trial and timing-pool set, the
// reference outputs for them, and the reference's own timing. Produced once by a pristine worker that never
// loads candidate code, then shared (read-only) by every evaluation with the same key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/evaluation.h"
#include "eval/gpu_timing.h"
#include "eval/tensor.h"

namespace kgym {

// Seeds are derived from the evaluator's secret, the reference key and an index (splitmix64's finaliser).
inline uint64_t MixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct ReferenceTrial {
  std::string variant;   // "default" (the task's own get_inputs), "signed" (wider, signed floats) or "sparse" (8
                         // nonzeros per tensor of falling magnitudes, zeros elsewhere)
  bool skipped = false;  // the reference was not finite on this variant: not used
  Values inputs, outputs;
  // Default trials: the fp64 oracle's values and their flat indices per output (eval/precision.h); empty without one.
  Values oracle, oracle_index;
};

struct ReferenceData {
  std::string key;           // hex hash of (reference code, configuration, device model)
  std::string error_kind;    // empty when the reference worked
  std::string error_detail;  // a sentence about what is broken in the reference
  std::string error_output;  // captured output of the reference worker when it failed
  uint64_t init_seed = 0;
  Values init;  // constructor arguments
  std::vector<ReferenceTrial> trials;
  std::vector<ReferenceTrial> pool;   // timing input sets (default variant)
  std::optional<TimingStats> timing;  // timeline spans where the reference's kernels were recorded, else brackets
  ReferenceDeviceTiming device;       // what candidates' timelines are judged against
  nlohmann::json notes = nlohmann::json::object();
  uint64_t worker_peak_bytes =
      0;  // the reference worker's peak private memory (also notes' reference_worker_peak_bytes)
  size_t Bytes() const;
};

}  // namespace kgym
