// The roofline floor: the least time a call can physically take, from the bytes it must move (inputs read
// once, outputs written once) at the device's measured bandwidth and, optionally, the FLOPs it must do at
// the device's peak. A measured time below floor * (1 - margin) is impossible for honest work (cached
// results, skipped work, or broken timing) and is flagged with a sentence naming the numbers.
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace kgym::gpu {

struct RooflineInputs {
  double bytes_moved = 0;            // bytes that must cross DRAM at least once
  double bandwidth_bytes_per_s = 0;  // measured on this device (e.g. a large copy), not the datasheet
  double flops = 0;                  // optional: 0 means no compute bound
  double peak_flops_per_s = 0;       // required when flops > 0
};

struct RooflineFloor {
  double memory_floor_ns = 0;
  double compute_floor_ns = 0;
  double floor_ns = 0;  // max of the two
  RooflineInputs inputs;
};

// InvalidArgument when bytes or bandwidth are not positive finite numbers, flops is negative, or flops > 0
// without a positive peak.
Status ComputeRooflineFloor(const RooflineInputs& in, RooflineFloor* out);

struct RooflineCheck {
  bool below_floor = false;
  double measured_ns = 0;
  double floor_ns = 0;
  double limit_ns = 0;  // floor * (1 - margin)
  double margin = 0;
  std::string explanation;  // always set: why it passed or failed, with the numbers
  nlohmann::json ToJson() const;
};

// `margin` in [0, 1): tolerance for bandwidth measurement error (e.g. 0.1).
RooflineCheck CheckAgainstRoofline(double measured_ns, const RooflineFloor& floor, double margin);

}  // namespace kgym::gpu
