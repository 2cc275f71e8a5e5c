#include "gpu/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kgym::gpu {
namespace {

bool PositiveFinite(double x) { return std::isfinite(x) && x > 0; }

// "12.345 us" / "1.234 ms" style, so sentences stay readable across 6 orders of magnitude.
std::string Duration(double ns) {
  char buf[64];
  if (ns >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3f us", ns / 1e3);
  }
  return buf;
}

}  // namespace

Status ComputeRooflineFloor(const RooflineInputs& in, RooflineFloor* out) {
  if (!PositiveFinite(in.bytes_moved)) {
    return Status::InvalidArgument("roofline: bytes_moved must be a positive number of bytes");
  }
  if (!PositiveFinite(in.bandwidth_bytes_per_s)) {
    return Status::InvalidArgument("roofline: bandwidth_bytes_per_s must be positive (measure it on the device)");
  }
  if (!std::isfinite(in.flops) || in.flops < 0) {
    return Status::InvalidArgument("roofline: flops must be >= 0");
  }
  if (in.flops > 0 && !PositiveFinite(in.peak_flops_per_s)) {
    return Status::InvalidArgument("roofline: flops given without a positive peak_flops_per_s");
  }
  RooflineFloor f;
  f.inputs = in;
  f.memory_floor_ns = in.bytes_moved / in.bandwidth_bytes_per_s * 1e9;
  f.compute_floor_ns = in.flops > 0 ? in.flops / in.peak_flops_per_s * 1e9 : 0;
  f.floor_ns = std::max(f.memory_floor_ns, f.compute_floor_ns);
  *out = f;
  return Status::Ok();
}

RooflineCheck CheckAgainstRoofline(double measured_ns, const RooflineFloor& floor, double margin) {
  RooflineCheck c;
  c.measured_ns = measured_ns;
  c.floor_ns = floor.floor_ns;
  c.margin = std::clamp(margin, 0.0, 0.99);
  c.limit_ns = floor.floor_ns * (1 - c.margin);
  c.below_floor = measured_ns < c.limit_ns;

  const RooflineInputs& in = floor.inputs;
  char bound[256];
  if (floor.compute_floor_ns > floor.memory_floor_ns) {
    std::snprintf(bound, sizeof(bound), "%.4g FLOP at the peak %.4g TFLOP/s take %s", in.flops,
                  in.peak_flops_per_s / 1e12, Duration(floor.compute_floor_ns).c_str());
  } else {
    std::snprintf(bound, sizeof(bound), "%.0f bytes must move at the measured %.3f TB/s, which takes %s",
                  in.bytes_moved, in.bandwidth_bytes_per_s / 1e12, Duration(floor.memory_floor_ns).c_str());
  }
  char buf[640];
  std::snprintf(buf, sizeof(buf), "measured %s is %s the physical floor %s less %.0f%% margin (%s): %s.",
                Duration(measured_ns).c_str(), c.below_floor ? "below" : "not below", Duration(floor.floor_ns).c_str(),
                c.margin * 100, Duration(c.limit_ns).c_str(), bound);
  c.explanation = buf;
  return c;
}

nlohmann::json RooflineCheck::ToJson() const {
  return nlohmann::json{{"below_floor", below_floor}, {"measured_us", measured_ns / 1e3},
                        {"floor_us", floor_ns / 1e3}, {"limit_us", limit_ns / 1e3},
                        {"margin", margin},           {"explanation", explanation}};
}

}  // namespace kgym::gpu
