#include "gpu/kernel_timeline.h"

#include <algorithm>
#include <map>
#include <set>

#include "gpu/cupti_format.h"
#include "gpu/kernel_names.h"

namespace kgym::gpu {

nlohmann::json CallSpan::ToJson() const {
  return nlohmann::json{{"tag", tag},
                        {"phase", kgym_tag_phase(tag)},
                        {"call", kgym_tag_call(tag)},
                        {"num_kernels", num_kernels},
                        {"num_memory_ops", num_memory_ops},
                        {"num_streams", num_streams},
                        {"span_us", span_ns / 1e3},
                        {"busy_us", busy_ns / 1e3},
                        {"op_sum_us", op_sum_ns / 1e3},
                        {"kernel_sum_us", kernel_sum_ns / 1e3}};
}

uint64_t UnionLengthNs(std::vector<std::pair<uint64_t, uint64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  uint64_t total = 0;
  bool open = false;
  uint64_t cur_start = 0, cur_end = 0;
  for (const auto& [s, e] : intervals) {
    if (e <= s) continue;
    if (!open || s > cur_end) {
      if (open) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
      open = true;
    } else if (e > cur_end) {
      cur_end = e;
    }
  }
  if (open) total += cur_end - cur_start;
  return total;
}

std::string MemoryOpName(const MemoryOp& m) {
  if (m.kind == MemoryOpKind::kMemset) return "Memset";
  switch (m.copy_kind) {
    case 1:
      return "Memcpy HtoD";
    case 2:
      return "Memcpy DtoH";
    case 3:
      return "Memcpy HtoA";
    case 4:
      return "Memcpy AtoH";
    case 5:
      return "Memcpy AtoA";
    case 6:
      return "Memcpy AtoD";
    case 7:
      return "Memcpy DtoA";
    case 8:
      return "Memcpy DtoD";
    case 9:
      return "Memcpy HtoH";
    case 10:
      return "Memcpy PtoP";
    default:
      return "Memcpy";
  }
}

KernelTimeline KernelTimeline::FromRecords(const RecordStream& records) {
  KernelTimeline t;
  auto tag_of = [&](uint32_t corr) -> uint64_t {
    auto it = records.tag_of_correlation.find(corr);
    return it == records.tag_of_correlation.end() ? 0 : it->second;
  };
  t.ops_.reserve(records.kernels.size() + records.memory_ops.size());
  for (const KernelExec& k : records.kernels) {
    if (k.start_ns == 0 && k.end_ns == 0) {
      ++t.untimed_ops_;
      continue;
    }
    TimelineOp op;
    op.kind = OpKind::kKernel;
    op.tag = tag_of(k.correlation_id);
    op.start_ns = k.start_ns;
    op.end_ns = k.end_ns;
    op.device_id = k.device_id;
    op.stream_id = k.stream_id;
    op.correlation_id = k.correlation_id;
    op.name = k.name;
    op.display_name = Demangle(k.name);
    op.grid = k.grid;
    op.block = k.block;
    t.ops_.push_back(std::move(op));
  }
  for (const MemoryOp& m : records.memory_ops) {
    if (m.start_ns == 0 && m.end_ns == 0) {
      ++t.untimed_ops_;
      continue;
    }
    TimelineOp op;
    op.kind = m.kind == MemoryOpKind::kMemcpy ? OpKind::kMemcpy : OpKind::kMemset;
    op.tag = tag_of(m.correlation_id);
    op.start_ns = m.start_ns;
    op.end_ns = m.end_ns;
    op.device_id = m.device_id;
    op.stream_id = m.stream_id;
    op.correlation_id = m.correlation_id;
    op.name = MemoryOpName(m);
    op.display_name = op.name;
    op.bytes = m.bytes;
    t.ops_.push_back(std::move(op));
  }
  std::stable_sort(t.ops_.begin(), t.ops_.end(), [](const TimelineOp& a, const TimelineOp& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  });
  std::set<uint64_t> tags;
  for (const Marker& m : records.markers) {
    if (m.begin) tags.insert(m.tag);
  }
  t.marker_tags_.assign(tags.begin(), tags.end());
  return t;
}

std::vector<uint64_t> KernelTimeline::Tags() const {
  std::set<uint64_t> tags(marker_tags_.begin(), marker_tags_.end());
  for (const TimelineOp& op : ops_) tags.insert(op.tag);
  return std::vector<uint64_t>(tags.begin(), tags.end());
}

std::vector<const TimelineOp*> KernelTimeline::OpsForTag(uint64_t tag) const {
  std::vector<const TimelineOp*> out;
  for (const TimelineOp& op : ops_) {
    if (op.tag == tag) out.push_back(&op);
  }
  return out;
}

std::vector<const TimelineOp*> KernelTimeline::OpsForPhase(uint32_t phase) const {
  std::vector<const TimelineOp*> out;
  for (const TimelineOp& op : ops_) {
    if (op.tag != 0 && kgym_tag_phase(op.tag) == phase) out.push_back(&op);
  }
  return out;
}

CallSpan SummariseOps(uint64_t tag, const std::vector<const TimelineOp*>& ops) {
  CallSpan c;
  c.tag = tag;
  if (ops.empty()) return c;
  std::set<std::pair<uint32_t, uint32_t>> streams;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  intervals.reserve(ops.size());
  c.first_start_ns = ops.front()->start_ns;
  c.last_end_ns = ops.front()->end_ns;
  for (const TimelineOp* op : ops) {
    if (op->kind == OpKind::kKernel) {
      ++c.num_kernels;
      c.kernel_sum_ns += op->duration_ns();
    } else {
      ++c.num_memory_ops;
    }
    c.op_sum_ns += op->duration_ns();
    c.first_start_ns = std::min(c.first_start_ns, op->start_ns);
    c.last_end_ns = std::max(c.last_end_ns, op->end_ns);
    streams.emplace(op->device_id, op->stream_id);
    intervals.emplace_back(op->start_ns, op->end_ns);
  }
  c.num_streams = streams.size();
  c.span_ns = c.last_end_ns - c.first_start_ns;
  c.busy_ns = UnionLengthNs(std::move(intervals));
  return c;
}

CallSpan KernelTimeline::Call(uint64_t tag) const { return SummariseOps(tag, OpsForTag(tag)); }

std::vector<CallSpan> KernelTimeline::CallsInPhase(uint32_t phase) const {
  // One pass over the operations; std::map keeps tags ascending, and the call index is the low word of the
  // tag, so the result is in call order.
  std::map<uint64_t, std::vector<const TimelineOp*>> by_tag;
  for (uint64_t tag : marker_tags_) {
    if (tag != 0 && kgym_tag_phase(tag) == phase) by_tag[tag];
  }
  for (const TimelineOp& op : ops_) {
    if (op.tag != 0 && kgym_tag_phase(op.tag) == phase) by_tag[op.tag].push_back(&op);
  }
  std::vector<CallSpan> out;
  out.reserve(by_tag.size());
  for (const auto& [tag, ops] : by_tag) out.push_back(SummariseOps(tag, ops));
  return out;
}

uint64_t KernelTimeline::BusyNs() const {
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  intervals.reserve(ops_.size());
  for (const TimelineOp& op : ops_) intervals.emplace_back(op.start_ns, op.end_ns);
  return UnionLengthNs(std::move(intervals));
}

uint64_t KernelTimeline::KernelSumNs() const {
  uint64_t total = 0;
  for (const TimelineOp& op : ops_) {
    if (op.kind == OpKind::kKernel) total += op.duration_ns();
  }
  return total;
}

}  // namespace kgym::gpu
