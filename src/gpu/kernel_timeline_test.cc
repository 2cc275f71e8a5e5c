#include "gpu/kernel_timeline.h"

#include <gtest/gtest.h>

#include "gpu/cupti_format.h"

namespace kgym::gpu {
namespace {

// Builds streams the way libkgym_cupti.so would record them: each launch gets a correlation id and, when
// launched inside begin/end, an external-correlation record joining it to the tag.
class StreamBuilder {
 public:
  void Begin(uint64_t tag) {
    w_.AddMarker({true, tag, 0, 0, 1});
    current_ = tag;
  }
  void End() {
    w_.AddMarker({false, current_, 0, 0, 1});
    current_ = 0;
  }
  void Kernel(const std::string& name, uint64_t start, uint64_t end, uint32_t stream, uint32_t device = 0) {
    KernelExec k;
    k.name = name;
    k.start_ns = start;
    k.end_ns = end;
    k.stream_id = stream;
    k.device_id = device;
    k.correlation_id = ++corr_;
    w_.AddKernel(k);
    if (current_ != 0) w_.AddExternalCorrelation(k.correlation_id, current_);
  }
  void Memcpy(uint64_t start, uint64_t end, uint32_t stream) {
    MemoryOp m;
    m.kind = MemoryOpKind::kMemcpy;
    m.copy_kind = 8;
    m.start_ns = start;
    m.end_ns = end;
    m.stream_id = stream;
    m.bytes = 1 << 20;
    m.correlation_id = ++corr_;
    w_.AddMemoryOp(m);
    if (current_ != 0) w_.AddExternalCorrelation(m.correlation_id, current_);
  }
  KernelTimeline Build() {
    RecordStream rs;
    Status s = ParseRecordStream(w_.bytes(), {}, &rs);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return KernelTimeline::FromRecords(rs);
  }

 private:
  RecordStreamWriter w_;
  uint64_t current_ = 0;
  uint32_t corr_ = 0;
};

uint64_t T(uint32_t call) { return kgym_make_tag(KGYM_PHASE_TIMING, call); }

TEST(KernelTimelineTest, UnionOfIntervals) {
  EXPECT_EQ(UnionLengthNs({}), 0u);
  EXPECT_EQ(UnionLengthNs({{0, 10}, {5, 15}, {20, 30}}), 25u);
  EXPECT_EQ(UnionLengthNs({{20, 30}, {0, 100}}), 100u);    // containment, any order
  EXPECT_EQ(UnionLengthNs({{0, 10}, {10, 20}}), 20u);      // touching
  EXPECT_EQ(UnionLengthNs({{5, 5}, {9, 3}, {0, 1}}), 1u);  // empty and inverted add nothing
}

TEST(KernelTimelineTest, SideStreamWorkIsInsideTheCallSpan) {
  StreamBuilder b;
  b.Begin(T(0));
  b.Kernel("main", 1000, 1100, /*stream=*/7);
  b.Kernel("side", 1050, 1900, /*stream=*/13);  // a stream CUDA events on stream 7 would not wait for
  b.End();
  KernelTimeline tl = b.Build();
  CallSpan c = tl.Call(T(0));
  EXPECT_EQ(c.num_kernels, 2u);
  EXPECT_EQ(c.num_streams, 2u);
  EXPECT_EQ(c.first_start_ns, 1000u);
  EXPECT_EQ(c.last_end_ns, 1900u);
  EXPECT_EQ(c.span_ns, 900u);
  EXPECT_EQ(c.busy_ns, 900u);
  EXPECT_EQ(c.kernel_sum_ns, 100u + 850u);
}

TEST(KernelTimelineTest, OverlappingStreamsAreNotDoubleCounted) {
  StreamBuilder b;
  b.Begin(T(0));
  b.Kernel("a", 0, 400, 1);
  b.Kernel("b", 100, 300, 2);  // fully overlapped by a
  b.Kernel("c", 600, 700, 1);  // a gap of 200 ns
  b.End();
  KernelTimeline tl = b.Build();
  CallSpan c = tl.Call(T(0));
  EXPECT_EQ(c.span_ns, 700u);
  EXPECT_EQ(c.busy_ns, 500u);
  EXPECT_EQ(c.op_sum_ns, 700u);
  EXPECT_EQ(tl.BusyNs(), 500u);
  EXPECT_EQ(tl.KernelSumNs(), 700u);
}

TEST(KernelTimelineTest, GroupsByTagAcrossInterleavedRecordsAndKeepsEmptyCalls) {
  StreamBuilder b;
  b.Kernel("warmup_untagged", 10, 20, 1);
  for (uint32_t i = 0; i < 3; ++i) {
    b.Begin(T(i));
    if (i != 1) {  // call 1 launches nothing (a memoizer, say)
      b.Kernel("k", 1000 * (i + 1), 1000 * (i + 1) + 100 + i, 1);
      b.Memcpy(1000 * (i + 1) + 200, 1000 * (i + 1) + 260, 2);
    }
    b.End();
  }
  b.Begin(kgym_make_tag(KGYM_PHASE_CORRECTNESS, 0));
  b.Kernel("k", 50000, 50100, 1);
  b.End();
  KernelTimeline tl = b.Build();

  std::vector<CallSpan> calls = tl.CallsInPhase(KGYM_PHASE_TIMING);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(kgym_tag_call(calls[0].tag), 0u);
  EXPECT_EQ(kgym_tag_call(calls[1].tag), 1u);
  EXPECT_EQ(kgym_tag_call(calls[2].tag), 2u);
  EXPECT_EQ(calls[0].num_kernels, 1u);
  EXPECT_EQ(calls[0].num_memory_ops, 1u);
  EXPECT_EQ(calls[0].span_ns, 260u);  // memcpy end - kernel start
  EXPECT_TRUE(calls[1].empty());
  EXPECT_EQ(calls[1].span_ns, 0u);
  EXPECT_EQ(calls[2].kernel_sum_ns, 102u);

  EXPECT_EQ(tl.Call(0).num_kernels, 1u);  // the untagged warm-up
  EXPECT_EQ(tl.OpsForPhase(KGYM_PHASE_CORRECTNESS).size(), 1u);
  std::vector<uint64_t> tags = tl.Tags();
  EXPECT_EQ(tags.front(), 0u);
  EXPECT_EQ(tags.size(), 5u);  // untagged, 3 timing calls, 1 correctness call
  EXPECT_TRUE(tl.CallsInPhase(KGYM_PHASE_PROFILE).empty());
}

TEST(KernelTimelineTest, OpsAreSortedByStartAndUntimedOnesAreCounted) {
  RecordStreamWriter w;
  KernelExec late;
  late.name = "late";
  late.start_ns = 500;
  late.end_ns = 600;
  KernelExec early = late;
  early.name = "early";
  early.start_ns = 100;
  early.end_ns = 200;
  KernelExec untimed = late;
  untimed.name = "untimed";
  untimed.start_ns = 0;
  untimed.end_ns = 0;
  w.AddKernel(late);
  w.AddKernel(untimed);
  w.AddKernel(early);
  RecordStream rs;
  ASSERT_TRUE(ParseRecordStream(w.bytes(), {}, &rs).ok());
  KernelTimeline tl = KernelTimeline::FromRecords(rs);
  ASSERT_EQ(tl.ops().size(), 2u);
  EXPECT_EQ(tl.ops()[0].name, "early");
  EXPECT_EQ(tl.ops()[1].name, "late");
  EXPECT_EQ(tl.untimed_ops(), 1u);
}

TEST(KernelTimelineTest, DemanglesDisplayNamesAndNamesMemoryOps) {
  StreamBuilder b;
  b.Begin(T(0));
  b.Kernel("_Z10add_kernelPfS_i", 0, 10, 1);
  b.Memcpy(20, 30, 1);
  b.End();
  KernelTimeline tl = b.Build();
  ASSERT_EQ(tl.ops().size(), 2u);
  EXPECT_EQ(tl.ops()[0].display_name, "add_kernel(float*, float*, int)");
  EXPECT_EQ(tl.ops()[1].name, "Memcpy DtoD");
  nlohmann::json j = tl.Call(T(0)).ToJson();
  EXPECT_EQ(j["phase"], KGYM_PHASE_TIMING);
  EXPECT_EQ(j["num_memory_ops"], 1);
  EXPECT_DOUBLE_EQ(j["span_us"].get<double>(), 0.03);
}

}  // namespace
}  // namespace kgym::gpu
