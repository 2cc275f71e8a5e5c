// KernelTimeline: the GPU operations of one evaluation process, joined to the tags that attribute them to a
// phase and call (tag encoding in cupti_format.h), with the per-call numbers timing is built on.
//
// Per-call time is the span from the first operation's start to the last operation's end of that call over
// ALL streams and devices, so side-stream work cannot escape it. Busy time is the length of the union of the
// operations' intervals (overlapping streams are not double counted); the kernel sum adds durations.
// Operations are kernels, memcpys and memsets: a candidate that moves a cached answer with cudaMemcpy is
// doing GPU work and is timed for it. A call whose begin/end markers were recorded but which launched
// nothing is present with zero operations. Immutable once built; safe to read from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gpu/record_stream.h"

namespace kgym::gpu {

enum class OpKind { kKernel, kMemcpy, kMemset };

struct TimelineOp {
  OpKind kind = OpKind::kKernel;
  uint64_t tag = 0;  // 0: untagged
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  std::string name;          // kernels: raw CUPTI name; memory ops: "Memcpy DtoD", "Memset", ...
  std::string display_name;  // kernels: demangled; memory ops: same as name
  std::array<int32_t, 3> grid{1, 1, 1};
  std::array<int32_t, 3> block{1, 1, 1};
  uint64_t bytes = 0;  // memory ops

  uint64_t duration_ns() const { return end_ns - start_ns; }
};

struct CallSpan {
  uint64_t tag = 0;
  size_t num_kernels = 0;
  size_t num_memory_ops = 0;
  size_t num_streams = 0;       // distinct (device, stream) pairs
  uint64_t first_start_ns = 0;  // 0 when the call has no operations
  uint64_t last_end_ns = 0;
  uint64_t span_ns = 0;        // last_end - first_start
  uint64_t busy_ns = 0;        // union of intervals
  uint64_t op_sum_ns = 0;      // sum of operation durations
  uint64_t kernel_sum_ns = 0;  // sum of kernel durations only

  bool empty() const { return num_kernels + num_memory_ops == 0; }
  double span_us() const { return static_cast<double>(span_ns) / 1e3; }
  nlohmann::json ToJson() const;
};

// Length of the union of half-open intervals [first, second). Empty or inverted intervals add nothing.
uint64_t UnionLengthNs(std::vector<std::pair<uint64_t, uint64_t>> intervals);

// The display name CUPTI-derived memory operations get ("Memcpy HtoD", "Memcpy DtoD", "Memset", ...).
std::string MemoryOpName(const MemoryOp& m);

class KernelTimeline {
 public:
  KernelTimeline() = default;
  // Builds the timeline: joins each operation's correlation id to its tag, sorts by start time. Records
  // without timestamps (start == end == 0, which CUPTI emits for work it could not time) are left out and
  // counted in untimed_ops().
  static KernelTimeline FromRecords(const RecordStream& records);

  const std::vector<TimelineOp>& ops() const { return ops_; }
  size_t untimed_ops() const { return untimed_ops_; }

  // Every tag that has operations or a begin marker, ascending; includes 0 if untagged work exists.
  std::vector<uint64_t> Tags() const;
  // The operations of one tag, in start order.
  std::vector<const TimelineOp*> OpsForTag(uint64_t tag) const;
  // The operations of every tag of `phase` (kgym_tag_phase), in start order.
  std::vector<const TimelineOp*> OpsForPhase(uint32_t phase) const;

  CallSpan Call(uint64_t tag) const;
  // One CallSpan per tag of `phase`, ordered by call index (empty calls included).
  std::vector<CallSpan> CallsInPhase(uint32_t phase) const;

  // Over the whole timeline.
  uint64_t BusyNs() const;
  uint64_t KernelSumNs() const;

 private:
  std::vector<TimelineOp> ops_;
  std::vector<uint64_t> marker_tags_;
  size_t untimed_ops_ = 0;
};

// Summary of the operations in `ops` as a CallSpan with the given tag.
CallSpan SummariseOps(uint64_t tag, const std::vector<const TimelineOp*>& ops);

}  // namespace kgym::gpu
