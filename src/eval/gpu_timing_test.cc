#include "eval/gpu_timing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "gpu/cupti_format.h"

namespace kgym {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

// A PyTorch library kernel as CUPTI names it (mangled, at::native).
const char kTorchVectorized[] =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"
    "T1_";
const char kTorchElementwise[] =
    "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_"
    "13BUnaryFunctorIfffNS0_15binary_"
    "internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_";

constexpr uint64_t kUs = 1000;  // ns

uint64_t Tag(uint32_t phase, uint32_t call) { return kgym_make_tag(phase, call); }

// Builds a stream the way libkgym_cupti.so records it: a launch inside begin/end gets a correlation
// id and an external-correlation record joining it to the tag; the stream ends with a FLUSH unless
// told otherwise.
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
  void Kernel(const std::string& name, uint64_t start, uint64_t end, uint32_t stream = 7) {
    gpu::KernelExec k;
    k.name = name;
    k.start_ns = start;
    k.end_ns = end;
    k.stream_id = stream;
    k.correlation_id = ++corr_;
    w_.AddKernel(k);
    if (current_ != 0) w_.AddExternalCorrelation(k.correlation_id, current_);
  }
  // One call of `phase`: the kernels back to back on stream 7 from `start`.
  void Call(uint32_t phase, uint32_t index, uint64_t start,
            const std::vector<std::pair<std::string, uint64_t>>& kernels) {
    Begin(Tag(phase, index));
    uint64_t t = start;
    for (const auto& [name, dur] : kernels) {
      Kernel(name, t, t + dur);
      t += dur;
    }
    End();
  }
  gpu::RecordStreamWriter& writer() { return w_; }
  WorkerTimeline Finish(bool flush = true) {
    if (flush) w_.AddFlush(1);
    return TimelineFromBytes(w_.bytes(), "");
  }

 private:
  gpu::RecordStreamWriter w_;
  uint64_t current_ = 0;
  uint32_t corr_ = 0;
};

// ---------------------------------------------------------------------------------------------------------
// RuntimeFromTimeline

TEST(RuntimeFromTimelineTest, TimelineWinsWhenTheSpanMatchesTheBracketLessTheOverhead) {
  RuntimeChoice c = RuntimeFromTimeline(0.95, 1.0, 0.05);
  EXPECT_EQ(c.source, "timeline");
  EXPECT_DOUBLE_EQ(c.runtime_ms, 0.95);
  EXPECT_THAT(c.why, IsEmpty());
  // A span longer than the bracket (clock domains differ) is still the timeline's.
  c = RuntimeFromTimeline(1.2, 1.0, 0.05);
  EXPECT_EQ(c.source, "timeline");
  EXPECT_DOUBLE_EQ(c.runtime_ms, 1.2);
}

TEST(RuntimeFromTimelineTest, ForgedShortSpanIsRaisedToTheFloor) {
  // bracket 2, overhead 0.05: seen 1.95; allowance 0.1 (5 %): floor 1.85.
  RuntimeChoice c = RuntimeFromTimeline(0.1, 2.0, 0.05);
  EXPECT_EQ(c.source, "supervisor");
  EXPECT_NEAR(c.runtime_ms, 1.85, 1e-12);
  EXPECT_NEAR(c.floor_ms, 1.85, 1e-12);
  EXPECT_THAT(c.why, HasSubstr("shorter"));
}

TEST(RuntimeFromTimelineTest, ReferenceHostTimeWidensTheFloor) {
  // The reference needed 0.3 ms of host time outside its kernels: a candidate may too.
  // Floor 3.4 - 0.3 - 0.3 - 0.17 = 2.63; without the host time 2.93.
  EXPECT_EQ(RuntimeFromTimeline(2.65, 3.4, 0.3, 0.3).source, "timeline");
  EXPECT_EQ(RuntimeFromTimeline(2.65, 3.4, 0.3).source, "supervisor");
  EXPECT_NEAR(RuntimeFromTimeline(2.6, 3.4, 0.3, 0.3).runtime_ms, 2.63, 1e-12);
}

TEST(RuntimeFromTimelineTest, NoTimelineGetsTheBracketLessOverheadAndHost) {
  RuntimeChoice c = RuntimeFromTimeline(-1, 1.0, 0.2);
  EXPECT_EQ(c.source, "supervisor");
  EXPECT_NEAR(c.runtime_ms, 0.8, 1e-12);
  EXPECT_THAT(c.why, HasSubstr("no usable kernel timeline"));
  EXPECT_NEAR(RuntimeFromTimeline(-1, 1.0, 0.2, 0.1).runtime_ms, 0.7, 1e-12);
  // A negative overhead never lengthens the call.
  c = RuntimeFromTimeline(-1, 1.0, -0.5);
  EXPECT_NEAR(c.runtime_ms, 1.0, 1e-12);
}

TEST(RuntimeFromTimelineTest, AllowanceIsFiftyMicrosecondsForShortCalls) {
  // bracket 0.2, overhead 0.02: seen 0.18; 5 % would be 0.01, so 50 us applies: the floor is 0.13.
  EXPECT_DOUBLE_EQ(RuntimeAllowanceMs(0.2), 0.05);
  EXPECT_EQ(RuntimeFromTimeline(0.1305, 0.2, 0.02).source, "timeline");
  EXPECT_EQ(RuntimeFromTimeline(0.1295, 0.2, 0.02).source, "supervisor");
  EXPECT_NEAR(RuntimeFromTimeline(0.1295, 0.2, 0.02).runtime_ms, 0.13, 1e-12);
}

TEST(RuntimeFromTimelineTest, AllowanceIsFivePercentForLongCalls) {
  // bracket 10, overhead 0: seen 10; allowance 0.5 (not 50 us): the floor is 9.5.
  EXPECT_EQ(RuntimeFromTimeline(9.501, 10.0, 0.0).source, "timeline");
  EXPECT_EQ(RuntimeFromTimeline(9.499, 10.0, 0.0).source, "supervisor");
  EXPECT_NEAR(RuntimeFromTimeline(9.499, 10.0, 0.0).runtime_ms, 9.5, 1e-12);
}

TEST(RuntimeFromTimelineTest, PipelinedBurstsKeepAnHonestSpanBehindASlowLaunchPath) {
  // Numbers of an honest Triton GEMM on the H200 (2026-12-04): bracket 3.686, its null calls 0.211, the reference's
  // host time 0.021: floor 3.686 - 0.211 - 0.021 - 0.184 = 3.270, above the span 3.201 (its launcher's host time).
  EXPECT_EQ(RuntimeFromTimeline(3.201, 3.686, 0.211, 0.021).source, "supervisor");
  // Pipelined calls cost 3.24 ms each: the floor falls to 3.24 - 0.184 and the span stands.
  RuntimeChoice c = RuntimeFromTimeline(3.201, 3.686, 0.211, 0.021, 3.24);
  EXPECT_EQ(c.source, "timeline");
  EXPECT_NEAR(c.floor_ms, 3.24 - 0.1843, 1e-9);
  // Bursts never raise the floor: slow bursts leave the single-call floor as it was.
  EXPECT_NEAR(RuntimeFromTimeline(3.3, 3.686, 0.211, 0.021, 9.0).floor_ms, 3.686 - 0.211 - 0.021 - 0.1843, 1e-9);
  EXPECT_EQ(RuntimeFromTimeline(3.3, 3.686, 0.211, 0.021, 9.0).source, "timeline");
}

TEST(RuntimeFromTimelineTest, ForgedBurstsGainAtMostTenPercentOfTheBracket) {
  // A forged span of 0.5 ms with bursts that claim nothing at all: the floor drops by 10 % of the bracket, no more.
  RuntimeChoice c = RuntimeFromTimeline(0.5, 3.686, 0.211, 0.021, 0.0);
  EXPECT_EQ(c.source, "supervisor");
  EXPECT_NEAR(c.runtime_ms, 3.686 - 0.211 - 0.021 - 0.1843 - 0.3686, 1e-9);
  EXPECT_THAT(c.why, HasSubstr("pipelined"));
}

TEST(BurstPerCallTest, FastestModelBurstLessTheFlushOnlyMedianOverK) {
  EXPECT_NEAR(BurstPerCallMs({27.0, 26.2}, {1.0, 1.4, 1.2}, 8, 0), (26.2 - 1.2) / 8, 1e-12);
  // A process whose flush-only bursts run slow is capped at 1.5x the reference's + 50 us.
  EXPECT_NEAR(BurstPerCallMs({27.0}, {9.0}, 8, 1.0), (27.0 - 1.55) / 8, 1e-12);
  EXPECT_DOUBLE_EQ(BurstPerCallMs({1.0}, {2.0}, 8, 0), 0.0);  // never negative
  EXPECT_LT(BurstPerCallMs({}, {1.0}, 8, 0), 0);
  EXPECT_LT(BurstPerCallMs({1.0}, {1.0}, 0, 0), 0);
}

// ---------------------------------------------------------------------------------------------------------
// CandidateKernelsFromSource

TEST(CandidateKernelsFromSourceTest, FindsTritonKernelsUnderJitAutotuneAndHeuristics) {
  const std::string code = R"PY(
import torch
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass

@triton.autotune(configs=[
    triton.Config({"BLOCK": 128}, num_warps=4),
    triton.Config({"BLOCK": 256}, num_warps=8),
  ],
  key=["n"])
@triton.jit
def tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass

@triton.heuristics({"EVEN": lambda args: args["n"] % 128 == 0})
@triton.jit
def even_kernel(x_ptr, n, EVEN: tl.constexpr):
    pass

def helper(x):
    return x + 1

class Model(torch.nn.Module):
    @staticmethod
    def static_helper(x):
        return x

    def forward(self, x):
        return helper(x)
)PY";
  std::vector<std::string> found;
  gpu::CandidateKernelNames names = CandidateKernelsFromSource(code, {}, &found);
  EXPECT_THAT(found, UnorderedElementsAre("add_kernel", "tuned_kernel", "even_kernel"));
  EXPECT_EQ(names.size(), 3u);
  EXPECT_TRUE(names.Matches("tuned_kernel"));
  EXPECT_TRUE(names.Matches("add_kernel_0d1d2d"));  // triton 2.x suffix
  EXPECT_FALSE(names.Matches("helper"));
  EXPECT_FALSE(names.Matches("static_helper"));
  EXPECT_FALSE(names.Matches("forward"));
}

TEST(CandidateKernelsFromSourceTest, AutotuneConfigLinesDoNotEndTheDecorator) {
  // The decorator's brackets close on a line of their own; the def after the next decorator is the
  // kernel.
  const std::string code =
      "@triton.autotune(\n"
      "    configs=[triton.Config({'B': 64})],\n"
      "    key=['n'],\n"
      ")\n"
      "@triton.jit\n"
      "def k2(x):\n"
      "    pass\n"
      "def not_a_kernel(x):\n"
      "    pass\n";
  std::vector<std::string> found;
  CandidateKernelsFromSource(code, {}, &found);
  EXPECT_THAT(found, ElementsAre("k2"));
}

TEST(CandidateKernelsFromSourceTest, FindsCudaGlobalsInPythonStrings) {
  const std::string code = R"PY(
import torch
from torch.utils.cpp_extension import load_inline

cuda_src = """
__global__ void my_kernel(float* x) {
    x[threadIdx.x] = 0;
}

__global__ void __launch_bounds__(256) bounded_kernel(const float* a) {
}

template <typename T>
__global__ void tk(T* p) { }

extern "C" __global__ void
split_line_kernel(int n) { }

__device__ float helper_device(float x) { return x; }

torch::Tensor launch(torch::Tensor x) {
    my_kernel<<<1, 32>>>(x.data_ptr<float>());
    return x;
}
"""
mod = load_inline(name="m", cpp_sources="", cuda_sources=cuda_src, functions=["launch"])
)PY";
  std::vector<std::string> found;
  gpu::CandidateKernelNames names = CandidateKernelsFromSource(code, {}, &found);
  EXPECT_THAT(found, UnorderedElementsAre("my_kernel", "bounded_kernel", "tk", "split_line_kernel"));
  EXPECT_TRUE(names.Matches("_Z9my_kernelPf"));  // mangled as CUPTI reports it
  EXPECT_TRUE(names.Matches("_Z14bounded_kernelPKf"));
  EXPECT_TRUE(names.Matches("_Z2tkIfEvPT_"));  // tk<float>: untemplated name matches
  EXPECT_FALSE(names.Matches("_Z13helper_devicef"));
  EXPECT_FALSE(names.Matches("launch"));
}

TEST(CandidateKernelsFromSourceTest, DropsNamesThatRanInTheReference) {
  const std::string code = R"PY(
@triton.jit
def triton_poi_fused_add_0(x):
    pass

@triton.jit
def add_kernel(x):
    pass

@triton.jit
def vectorized_elementwise_kernel(x):
    pass

@triton.jit
def mine(x):
    pass

src = """
__global__ void elementwise_kernel(float* x, int n) { }
__global__ void my_cuda_kernel(float* x) { }
"""
)PY";
  // The reference ran a torch.compile Triton kernel (exact name), a triton 2.x specialisation of
  // add_kernel, a global-namespace CUDA kernel whose qualified name is elementwise_kernel, and
  // at::native kernels.
  const std::set<std::string> ref = {"triton_poi_fused_add_0", "add_kernel_0d1d2de", "_Z18elementwise_kernelPfi",
                                     kTorchVectorized, kTorchElementwise};
  std::vector<std::string> found;
  gpu::CandidateKernelNames names = CandidateKernelsFromSource(code, ref, &found);
  // vectorized_elementwise_kernel (Triton) is not at::native::vectorized_elementwise_kernel:
  // matching is exact.
  EXPECT_THAT(found, UnorderedElementsAre("vectorized_elementwise_kernel", "mine", "my_cuda_kernel"));
  EXPECT_FALSE(names.Matches("triton_poi_fused_add_0"));
  EXPECT_FALSE(names.Matches("_Z18elementwise_kernelPfi"));
  EXPECT_FALSE(names.Matches(kTorchVectorized));
  EXPECT_TRUE(names.Matches("mine"));
  EXPECT_TRUE(names.Matches("_Z14my_cuda_kernelPf"));

  // Without the global-namespace kernel, a CUDA elementwise_kernel is the candidate's: the
  // at::native kernel of that name has the qualified name at::native::elementwise_kernel.
  found.clear();
  names = CandidateKernelsFromSource("__global__ void elementwise_kernel(float* x) {}", {kTorchElementwise}, &found);
  EXPECT_THAT(found, ElementsAre("elementwise_kernel"));
  EXPECT_FALSE(names.Matches(kTorchElementwise));
}

TEST(CandidateKernelsFromSourceTest, NoKernelsInAPureTorchRewrite) {
  const std::string code = R"PY(
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()

    @torch.no_grad()
    def forward(self, x):
        return torch.relu(x) * 2
)PY";
  std::vector<std::string> found;
  gpu::CandidateKernelNames names = CandidateKernelsFromSource(code, {}, &found);
  EXPECT_TRUE(names.empty());
  EXPECT_THAT(found, IsEmpty());
}

TEST(CandidateKernelsFromSourceTest, TorchJitScriptIsNotAKernel) {
  // TorchScript runs PyTorch's own kernels; a scripted helper is no kernel compiled from the
  // candidate.
  const std::string code = R"PY(
import torch

@torch.jit.script
def fused_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))

@triton.jit
def real_kernel(x):
    pass

@triton.jit(do_not_specialize=["n"])
def called_jit(x, n):
    pass

@jit
def imported_jit(x):
    pass

@functools.lru_cache(maxsize=None)
def cached(n):
    return n
)PY";
  std::vector<std::string> found;
  CandidateKernelsFromSource(code, {}, &found);
  EXPECT_THAT(found, ElementsAre("real_kernel", "called_jit", "imported_jit"));
}

TEST(CandidateKernelsFromSourceTest, GlobalInProseIsNotAKernel) {
  // "__global__" in a comment or docstring is followed by Python, not a declaration.
  const std::string code = R"PY(
import torch

class Model(torch.nn.Module):
    """Fuses the ops without writing a CUDA __global__ function by hand."""
    def forward(self, x):
        # no __global__ kernels here
        return torch.relu(x)
)PY";
  std::vector<std::string> found;
  gpu::CandidateKernelNames names = CandidateKernelsFromSource(code, {}, &found);
  EXPECT_THAT(found, IsEmpty());
  EXPECT_TRUE(names.empty());
}

// ---------------------------------------------------------------------------------------------------------
// TimelineFromBytes

TEST(TimelineFromBytesTest, EmptyBytesCarryTheWorkersReason) {
  WorkerTimeline t = TimelineFromBytes("", "the recorder is off: libkgym_cupti.so was not loaded");
  EXPECT_FALSE(t.ok);
  EXPECT_EQ(t.problem, "the recorder is off: libkgym_cupti.so was not loaded");
  EXPECT_EQ(t.bytes, 0u);
  t = TimelineFromBytes("", "");
  EXPECT_FALSE(t.ok);
  EXPECT_THAT(t.problem, Not(IsEmpty()));
}

TEST(TimelineFromBytesTest, GarbageIsMalformed) {
  std::string garbage = "this is not a kernel record stream, just some bytes of text padding it out";
  WorkerTimeline t = TimelineFromBytes(garbage, "");
  EXPECT_FALSE(t.ok);
  EXPECT_THAT(t.problem, HasSubstr("malformed"));
  EXPECT_EQ(t.bytes, garbage.size());
}

TEST(TimelineFromBytesTest, ErrorRecordMakesTheStreamUnusable) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_TIMING, 0, 1000, {{"k", 100}});
  b.writer().AddError(17, "cuptiActivityFlushAll: CUPTI_ERROR_UNKNOWN");
  WorkerTimeline t = b.Finish();
  EXPECT_FALSE(t.ok);
  EXPECT_THAT(t.problem, HasSubstr("CUPTI_ERROR_UNKNOWN"));
}

TEST(TimelineFromBytesTest, DroppedRecordsMakeTheStreamUnusable) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_TIMING, 0, 1000, {{"k", 100}});
  b.writer().AddDropped(5);
  WorkerTimeline t = b.Finish();
  EXPECT_FALSE(t.ok);
  EXPECT_THAT(t.problem, HasSubstr("dropped 5"));
}

TEST(TimelineFromBytesTest, FlushedStreamIsUsable) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_TIMING, 0, 1000, {{"k", 100}, {"k2", 50}});
  WorkerTimeline t = b.Finish();
  EXPECT_TRUE(t.ok) << t.problem;
  EXPECT_THAT(t.problem, IsEmpty());
  EXPECT_EQ(t.records.last_flush_sequence, 1u);
  ASSERT_EQ(t.timeline.ops().size(), 2u);
  EXPECT_EQ(t.timeline.Call(Tag(KGYM_PHASE_TIMING, 0)).span_ns, 150u);
}

TEST(TimelineFromBytesTest, StreamWithoutFlushIsUnusable) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_TIMING, 0, 1000, {{"k", 100}});
  WorkerTimeline t = b.Finish(/*flush=*/false);
  EXPECT_FALSE(t.ok);
  EXPECT_THAT(t.problem, HasSubstr("flush"));
  EXPECT_EQ(t.timeline.ops().size(), 1u);  // parsed all the same
}

TEST(TimelineFromBytesTest, CutTailAfterTheFlushIsAllowed) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_TIMING, 0, 1000, {{"k", 100}});
  b.writer().AddFlush(1);
  b.Kernel("late", 5000, 6000);
  std::string bytes = b.writer().bytes();
  bytes.resize(bytes.size() - 3);  // the worker's cap cut the last record
  WorkerTimeline t = TimelineFromBytes(bytes, "");
  EXPECT_TRUE(t.ok) << t.problem;
  EXPECT_EQ(t.timeline.ops().size(), 1u);
}

TEST(TimelineFromBytesTest, WorkerErrorWinsOverAGoodStream) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_TIMING, 0, 1000, {{"k", 100}});
  b.writer().AddFlush(1);
  WorkerTimeline t = TimelineFromBytes(b.writer().bytes(), "the stream was capped at 64 MiB");
  EXPECT_FALSE(t.ok);
  EXPECT_EQ(t.problem, "the stream was capped at 64 MiB");
}

// ---------------------------------------------------------------------------------------------------------
// SpansOfTimedCalls

TEST(SpansOfTimedCallsTest, SpanCoversEveryStreamAndBusyIsTheUnion) {
  StreamBuilder b;
  b.Begin(Tag(KGYM_PHASE_WARMUP, 0));
  b.Kernel("warm", 0, 10 * kUs);
  b.End();
  for (uint32_t i = 0; i < 3; ++i) {
    uint64_t base = (i + 1) * 10000 * kUs;
    b.Begin(Tag(KGYM_PHASE_TIMING, i));
    b.Kernel("a", base, base + 100 * kUs, 1);
    b.Kernel("_Z9my_kernelPf", base + 50 * kUs, base + 300 * kUs, 2);  // side stream, overlaps a
    b.Kernel("c", base + 400 * kUs, base + (500 + i) * kUs, 1);
    b.End();
  }
  WorkerTimeline t = b.Finish();
  ASSERT_TRUE(t.ok) << t.problem;
  TimedSpans s = SpansOfTimedCalls(t.timeline, 3);
  EXPECT_EQ(s.missing, 0);
  ASSERT_EQ(s.span_ms.size(), 3u);
  ASSERT_EQ(s.busy_ms.size(), 3u);
  ASSERT_EQ(s.kernel_ms.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(s.span_ms[i], 0.5 + i * 1e-3, 1e-9) << i;
    EXPECT_NEAR(s.busy_ms[i], 0.3 + 0.1 + i * 1e-3, 1e-9) << i;
    EXPECT_NEAR(s.kernel_ms[i], 0.1 + 0.25 + 0.1 + i * 1e-3, 1e-9) << i;
  }
  EXPECT_THAT(s.kernel_names, UnorderedElementsAre("a", "_Z9my_kernelPf", "c"));  // not the warm-up's
}

TEST(SpansOfTimedCallsTest, EmptyCallIsPresentAndALostCallIsMissing) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_TIMING, 0, 1000 * kUs, {{"k", 200 * kUs}});
  b.Call(KGYM_PHASE_TIMING, 1, 2000 * kUs, {});  // markers only: a memoizer launched nothing
  b.Call(KGYM_PHASE_TIMING, 2, 3000 * kUs, {{"k", 300 * kUs}});
  // call 3: no record at all
  WorkerTimeline t = b.Finish();
  ASSERT_TRUE(t.ok) << t.problem;
  TimedSpans s = SpansOfTimedCalls(t.timeline, 4);
  EXPECT_EQ(s.missing, 1);
  ASSERT_EQ(s.span_ms.size(), 3u);
  EXPECT_NEAR(s.span_ms[0], 0.2, 1e-9);
  EXPECT_EQ(s.span_ms[1], 0.0);
  EXPECT_EQ(s.busy_ms[1], 0.0);
  EXPECT_NEAR(s.span_ms[2], 0.3, 1e-9);
  EXPECT_THAT(s.kernel_names, ElementsAre("k"));
}

// ---------------------------------------------------------------------------------------------------------
// JudgeCandidateTiming

using KernelList = std::vector<std::pair<std::string, uint64_t>>;

// n timed calls (call i runs timed(i)) and, when `grad` is given, one DETECT_GRAD call.
WorkerTimeline Timeline(int n, const std::function<KernelList(int)>& timed, const KernelList* grad = nullptr) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_WARMUP, 0, 0, timed(0));
  for (int i = 0; i < n; ++i) b.Call(KGYM_PHASE_TIMING, i, (i + 1) * 100000 * kUs, timed(i));
  if (grad) b.Call(KGYM_PHASE_DETECT_GRAD, 0, (n + 1) * 100000 * kUs, *grad);
  return b.Finish();
}

CandidateTimingInputs Inputs(const WorkerTimeline& t, std::vector<double> brackets, double ref_span, double ref_gap) {
  CandidateTimingInputs in;
  in.timeline = &t;
  in.bracket_ms = std::move(brackets);
  in.event_ms = in.bracket_ms;
  in.ref.span_median_ms = ref_span;
  in.ref.gap_ms = ref_gap;
  in.ref.kernel_names = {kTorchVectorized, kTorchElementwise};
  return in;
}

const char kFusedCode[] = R"PY(
import torch, triton
import triton.language as tl

@triton.jit
def fused_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass

class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        fused_kernel[(1,)](x, out, x.numel(), BLOCK=1024)
        return out
)PY";

TEST(JudgeCandidateTimingTest, HonestFusedTritonCandidate) {
  const uint64_t durs[] = {200, 210, 190, 205, 195};  // us; median 200
  KernelList grad = {{"fused_kernel", 300 * kUs}};
  WorkerTimeline t = Timeline(
      5,
      [&](int i) {
        return KernelList{{"fused_kernel", durs[i] * kUs}};
      },
      &grad);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {0.25, 0.26, 0.24, 0.255, 0.245}, 0.5, 0.04);
  in.code = kFusedCode;
  in.grad_ran = true;
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  const nlohmann::json& md = v.metadata;
  EXPECT_FALSE(v.hacked) << v.detail;
  EXPECT_FALSE(v.decoy);
  EXPECT_EQ(v.source, "timeline");
  EXPECT_EQ(md["timing_source"], "timeline");
  EXPECT_FALSE(md.contains("timeline_problem"));
  EXPECT_EQ(v.stats.n, 5);
  EXPECT_NEAR(v.stats.median, 0.2, 1e-9);
  EXPECT_NEAR(v.stats.min, 0.19, 1e-9);
  EXPECT_NEAR(md["timing_supervisor_median_ms"].get<double>(), 0.25, 1e-12);
  EXPECT_THAT(md["candidate_kernels"].get<std::vector<std::string>>(), ElementsAre("fused_kernel"));
  for (const char* key :
       {"num_custom_kernels", "num_total_kernels", "custom_kernel_cuda_time_in_profiling_us",
        "total_kernel_run_time_in_profiling_us", "triton_kernel_coverage", "custom_kernel_cuda_time_coverage"})
    EXPECT_TRUE(md.contains(key)) << key;
  EXPECT_EQ(md["num_custom_kernels"], 1);
  EXPECT_EQ(md["num_total_kernels"], 1);
  EXPECT_NEAR(md["custom_kernel_cuda_time_in_profiling_us"].get<double>(), 1000.0,
              1e-6);  // 5 calls, 200 us avg
  EXPECT_NEAR(md["total_kernel_run_time_in_profiling_us"].get<double>(), 1000.0, 1e-6);
  EXPECT_THAT(md["custom_kernel_cuda_time_coverage"].get<std::string>(), HasSubstr("Coverage: 100.00%"));
  EXPECT_NEAR(md["coverage"]["ratio"].get<double>(), 1.0, 1e-9);
  EXPECT_FALSE(md.contains("coverage_below_floor"));
  EXPECT_EQ(md["detect_grad_custom_launches"], 1);
  EXPECT_TRUE(md.contains("timing_crosscheck"));
}

// Bursts run only where they can change the time: a span below the single calls' floor, judged without bursts.
TEST(JudgeCandidateTimingTest, BurstsCouldLowerOnlyASpanBelowTheFloorJudgedWithoutThem) {
  KernelList grad = {{"fused_kernel", 300 * kUs}};
  auto judge = [&](uint64_t span_us, std::vector<double> brackets, bool with_bursts) {
    WorkerTimeline t = Timeline(
        5,
        [&](int) {
          return KernelList{{"fused_kernel", span_us * kUs}};
        },
        &grad);
    EXPECT_TRUE(t.ok) << t.problem;
    CandidateTimingInputs in = Inputs(t, std::move(brackets), 0.5, 0.04);
    in.code = kFusedCode;
    in.grad_ran = true;
    if (with_bursts) {  // pipelined calls of 3.2 ms each, flushes 0.1 ms
      in.burst_ms = {8 * 3.2 + 0.1, 8 * 3.25 + 0.1};
      in.null_burst_ms = {0.1, 0.1};
      in.burst_k = 8;
    }
    return JudgeCandidateTiming(in);
  };
  // Brackets 3.686 ms less the reference's gap (0.04, no null calls) and the allowance (0.184): floor 3.46.
  const std::vector<double> slow_launch(5, 3.686);
  CandidateTimingVerdict above = judge(3600, slow_launch, false);
  EXPECT_EQ(above.source, "timeline");
  EXPECT_FALSE(above.bursts_could_lower);
  CandidateTimingVerdict below = judge(3201, slow_launch, false);
  EXPECT_EQ(below.source, "supervisor");
  EXPECT_TRUE(below.bursts_could_lower);
  // Run, the bursts lower the floor and the span stands; judged with them there is nothing more to run.
  CandidateTimingVerdict after = judge(3201, slow_launch, true);
  EXPECT_EQ(after.source, "timeline");
  EXPECT_FALSE(after.bursts_could_lower);
  EXPECT_NEAR(after.stats.median, 3.201, 1e-9);
}

TEST(JudgeCandidateTimingTest, LazyCandidateIsReportedBelowTheCoverageFloor) {
  KernelList call = {{"lazy_kernel", 1 * kUs}, {kTorchElementwise, 1000 * kUs}};
  WorkerTimeline t = Timeline(
      5, [&](int) { return call; }, &call);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {1.05, 1.05, 1.06, 1.04, 1.05}, 1.0, 0.04);
  in.code = "@triton.jit\ndef lazy_kernel(x):\n    pass\n";
  in.grad_ran = true;
  in.coverage_floor = 0.1;
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  const nlohmann::json& md = v.metadata;
  EXPECT_FALSE(v.hacked) << v.detail;
  EXPECT_FALSE(v.decoy);
  EXPECT_EQ(v.source, "timeline");
  double ratio = md["coverage"]["ratio"].get<double>();
  EXPECT_GT(ratio, 0.0);
  EXPECT_LT(ratio, 0.01);
  EXPECT_EQ(md.value("coverage_below_floor", false), true);
  EXPECT_DOUBLE_EQ(md["coverage"]["coverage_floor"].get<double>(), 0.1);
  EXPECT_EQ(md["num_custom_kernels"], 1);
  EXPECT_EQ(md["num_total_kernels"], 2);
}

// n rotation calls running `rot`, then `fresh` fresh-set calls (ids n..) running `miss`.
WorkerTimeline TimelineWithFresh(int n, const KernelList& rot, int fresh, const KernelList& miss) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_WARMUP, 0, 0, rot);
  for (int i = 0; i < n + fresh; ++i) b.Call(KGYM_PHASE_TIMING, i, (i + 1) * 100000 * kUs, i < n ? rot : miss);
  return b.Finish();
}

// Inputs of a pure-torch candidate whose timed calls 5..7 ran on fresh sets.
CandidateTimingInputs FreshInputs(const WorkerTimeline& t, std::vector<double> brackets, double ref_span,
                                  double ref_gap) {
  CandidateTimingInputs in = Inputs(t, std::move(brackets), ref_span, ref_gap);
  in.code = "class ModelNew: pass\n";
  in.fresh_calls = 3;
  return in;
}

TEST(JudgeCandidateTimingTest, ContentCacheIsHackedOnDeviceTime) {
  // A hit syncs and copies (60 us of device work); a miss runs the 2.7 ms GEMM. The brackets (hit 0.55 ms, harness
  // 0.36 ms) would not trip the supervisor's four-times rule on the fresh calls' 3.3 ms.
  KernelList hit = {{kTorchElementwise, 60 * kUs}}, miss = {{kTorchElementwise, 2700 * kUs}};
  WorkerTimeline t = TimelineWithFresh(5, hit, 3, miss);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = FreshInputs(t, {0.55, 0.55, 0.56, 0.54, 0.55}, 2.7, 0.36);
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_TRUE(v.hacked);
  EXPECT_THAT(v.detail, HasSubstr("hacked (caching)"));
  EXPECT_EQ(v.metadata["timeline_fresh_busy_ms"].size(), 3u);
  EXPECT_LT(v.metadata["timeline_repeat_ratio"].get<double>(), 0.05);
}

TEST(JudgeCandidateTimingTest, HonestKernelWithSlowerFreshSetsIsNotCaching) {
  // Fresh sets a little slower (cold TLB, other data): far from the rule's three times.
  KernelList rot = {{kTorchElementwise, 100 * kUs}}, fresh = {{kTorchElementwise, 130 * kUs}};
  WorkerTimeline t = TimelineWithFresh(5, rot, 3, fresh);
  CandidateTimingInputs in = FreshInputs(t, {0.14, 0.14, 0.14, 0.14, 0.14}, 0.1, 0.04);
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_FALSE(v.hacked) << v.detail;
  EXPECT_NEAR(v.metadata["timeline_repeat_ratio"].get<double>(), 100.0 / 130.0, 1e-9);
}

TEST(JudgeCandidateTimingTest, TinyKernelsNeedTheAbsoluteMarginToBeCaching) {
  // 2 us against 10 us: five times, but 8 us is noise-sized for a launch; not judged.
  KernelList rot = {{kTorchElementwise, 2 * kUs}}, fresh = {{kTorchElementwise, 10 * kUs}};
  WorkerTimeline t = TimelineWithFresh(5, rot, 3, fresh);
  CandidateTimingInputs in = FreshInputs(t, {0.05, 0.05, 0.05, 0.05, 0.05}, 0.01, 0.04);
  EXPECT_FALSE(JudgeCandidateTiming(in).hacked);
}

TEST(JudgeCandidateTimingTest, FreshCallsMissingFromTheTimelineAreReportedNotJudged) {
  KernelList rot = {{kTorchElementwise, 100 * kUs}};
  WorkerTimeline t = TimelineWithFresh(5, rot, 0, rot);
  CandidateTimingInputs in = FreshInputs(t, {0.14, 0.14, 0.14, 0.14, 0.14}, 0.1, 0.04);
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_FALSE(v.hacked);
  EXPECT_TRUE(v.metadata.contains("timeline_fresh_problem"));
}

TEST(JudgeCandidateTimingTest, DecoyWhenTheTimedCallsRunOnlyLibraryKernels) {
  KernelList lib = {{kTorchVectorized, 100 * kUs}};
  WorkerTimeline t = Timeline(
      5, [&](int) { return lib; }, &lib);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {0.12, 0.12, 0.12, 0.12, 0.12}, 0.1, 0.01);
  in.code = kFusedCode;
  in.grad_ran = true;
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_TRUE(v.hacked);
  EXPECT_TRUE(v.decoy);
  EXPECT_THAT(v.detail, HasSubstr("decoy"));
  EXPECT_EQ(v.source, "timeline");  // the time is still reported
}

TEST(JudgeCandidateTimingTest, DecoyWhenTheKernelDoesNotRunWithGradEnabled) {
  KernelList timed = {{"fused_kernel", 100 * kUs}};
  KernelList grad = {{kTorchVectorized, 100 * kUs}};  // a fallback path when grad is on
  WorkerTimeline t = Timeline(
      5, [&](int) { return timed; }, &grad);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {0.12, 0.12, 0.12, 0.12, 0.12}, 0.1, 0.01);
  in.code = kFusedCode;
  in.grad_ran = true;
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_TRUE(v.hacked);
  EXPECT_TRUE(v.decoy);
  EXPECT_THAT(v.detail, HasSubstr("decoy"));
  EXPECT_EQ(v.metadata["detect_grad_custom_launches"], 0);

  // The same run not judged when the decoy rule is off, or for a CUDA candidate.
  in.detect_decoy = false;
  EXPECT_FALSE(JudgeCandidateTiming(in).decoy);
  in.detect_decoy = true;
  in.backend = "cuda";
  EXPECT_FALSE(JudgeCandidateTiming(in).decoy);
}

TEST(JudgeCandidateTimingTest, GradCallThatDidNotRunIsJudgedOnTheTimedCalls) {
  KernelList timed = {{"fused_kernel", 100 * kUs}};
  WorkerTimeline t = Timeline(3, [&](int) { return timed; });
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {0.12, 0.12, 0.12}, 0.1, 0.01);
  in.code = kFusedCode;
  in.grad_ran = false;
  in.grad_error = "backward is not implemented";
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_FALSE(v.decoy) << v.detail;
  EXPECT_EQ(v.metadata["detect_grad_error"], "backward is not implemented");
}

TEST(JudgeCandidateTimingTest, PureTorchRewriteIsNeverADecoy) {
  KernelList lib = {{kTorchVectorized, 100 * kUs}, {kTorchElementwise, 50 * kUs}};
  WorkerTimeline t = Timeline(
      5, [&](int) { return lib; }, &lib);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {0.17, 0.17, 0.17, 0.17, 0.17}, 0.2, 0.01);
  in.grad_ran = true;
  for (const std::string& code : {
           std::string("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                       "        return torch.relu(x)\n"),
           std::string("import torch\n@torch.jit.script\ndef act(x):\n    return torch.relu(x)\n"
                       "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        "
                       "return act(x)\n"),
           std::string("import torch\n# no __global__ kernels: torch does it\nclass "
                       "ModelNew(torch.nn.Module):\n"
                       "    def forward(self, x):\n        return torch.relu(x)\n"),
       }) {
    in.code = code;
    CandidateTimingVerdict v = JudgeCandidateTiming(in);
    EXPECT_FALSE(v.hacked) << code << "\n" << v.detail;
    EXPECT_FALSE(v.decoy) << code;
    EXPECT_TRUE(v.metadata["candidate_kernels"].empty()) << code;
    EXPECT_EQ(v.metadata["num_custom_kernels"], 0);
    EXPECT_EQ(v.metadata["num_total_kernels"], 2);
  }
}

// bytes 1e9 at 4000 GB/s: a floor of 0.25 ms, flagged below 0.125 ms (margin 0.5).
CandidateTimingInputs RooflineInputs(const WorkerTimeline& t, double ref_span) {
  CandidateTimingInputs in = Inputs(t, {0.08, 0.08, 0.08}, ref_span, 0.03);
  in.code = kFusedCode;
  in.grad_ran = true;
  in.ref.bytes_moved = 1e9;
  in.ref.bandwidth_gbps = 4000;
  in.roofline_margin = 0.5;
  return in;
}

TEST(JudgeCandidateTimingTest, FasterThanTheRooflineIsHacked) {
  KernelList call = {{"fused_kernel", 50 * kUs}};
  WorkerTimeline t = Timeline(
      3, [&](int) { return call; }, &call);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingVerdict v = JudgeCandidateTiming(RooflineInputs(t, 1.0));
  EXPECT_EQ(v.source, "timeline");
  EXPECT_NEAR(v.stats.median, 0.05, 1e-9);
  EXPECT_TRUE(v.hacked);
  EXPECT_FALSE(v.decoy);
  EXPECT_THAT(v.detail, HasSubstr("physically"));
  EXPECT_EQ(v.metadata["roofline"]["below_floor"], true);
  EXPECT_NEAR(v.metadata["roofline"]["floor_us"].get<double>(), 250.0, 1e-6);
}

TEST(JudgeCandidateTimingTest, RooflineIsNotJudgedWhenTheReferenceIsBelowItToo) {
  KernelList call = {{"fused_kernel", 50 * kUs}};
  WorkerTimeline t = Timeline(
      3, [&](int) { return call; }, &call);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingVerdict v = JudgeCandidateTiming(RooflineInputs(t, 0.1));
  EXPECT_FALSE(v.hacked) << v.detail;
  EXPECT_TRUE(v.metadata["roofline"].contains("not_judged"));
}

TEST(JudgeCandidateTimingTest, RooflineMarginIsHonoured) {
  // 0.15 ms is under the floor (0.25) but above floor * (1 - margin) = 0.125.
  KernelList call = {{"fused_kernel", 150 * kUs}};
  WorkerTimeline t = Timeline(
      3, [&](int) { return call; }, &call);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = RooflineInputs(t, 1.0);
  in.bracket_ms = {0.18, 0.18, 0.18};
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_EQ(v.source, "timeline");
  EXPECT_FALSE(v.hacked) << v.detail;
  EXPECT_EQ(v.metadata["roofline"]["below_floor"], false);
  EXPECT_FALSE(v.metadata["roofline"].contains("not_judged"));
}

TEST(JudgeCandidateTimingTest, ForgedShortTimelineIsRaisedToTheFloor) {
  KernelList call = {{"fused_kernel", 100 * kUs}};
  WorkerTimeline t = Timeline(
      5, [&](int) { return call; }, &call);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {2.0, 2.1, 1.9, 2.0, 2.05}, 1.5, 0.05);
  in.code = kFusedCode;
  in.grad_ran = true;
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  // Median bracket 2.0 less the overhead 0.05 and the allowance 0.1 (5 %): 1.85.
  EXPECT_EQ(v.source, "supervisor");
  EXPECT_NEAR(v.stats.median, 1.85, 1e-9);
  EXPECT_NEAR(v.metadata["timing_floor_ms"].get<double>(), 1.85, 1e-9);
  ASSERT_EQ(v.stats.samples_ms.size(), 5u);
  EXPECT_NEAR(v.stats.samples_ms[1], 1.95, 1e-9);  // each bracket less the same amount, in call order
  EXPECT_NEAR(v.stats.min, 1.75, 1e-9);
  EXPECT_THAT(v.metadata["timing_source_reason"].get<std::string>(), Not(IsEmpty()));
  EXPECT_NEAR(v.metadata["timeline_span_median_ms"].get<double>(), 0.1, 1e-9);
  EXPECT_FALSE(v.hacked) << v.detail;
}

TEST(JudgeCandidateTimingTest, OwnNullCallsReplaceTheReferencesGap) {
  // The candidate's process is 0.25 ms slower per round trip than the reference's was: with its own null calls
  // its honest 2.7 ms span stands; with the reference's gap alone it would be raised.
  KernelList call = {{"fused_kernel", 2700 * kUs}};
  WorkerTimeline t = Timeline(
      5, [&](int) { return call; }, &call);
  CandidateTimingInputs in = Inputs(t, {3.5, 3.5, 3.5, 3.5, 3.5}, 2.7, 0.4);
  in.ref.null_ms = 0.3;  // the reference needed 0.1 ms of host time beyond its null calls
  in.code = kFusedCode;
  in.grad_ran = true;
  EXPECT_EQ(JudgeCandidateTiming(in).source, "supervisor");  // 3.5 - 0.4 - 0.175 = 2.925 > 2.7
  in.null_ms = {0.55, 0.55, 0.56};
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_EQ(v.source, "timeline") << v.metadata.dump();
  EXPECT_NEAR(v.stats.median, 2.7, 1e-9);
  EXPECT_NEAR(v.metadata["timing_harness_overhead_ms"].get<double>(), 0.55, 1e-9);
  EXPECT_NEAR(v.metadata["timing_reference_host_ms"].get<double>(), 0.1, 1e-9);
  // Null calls slowed far beyond the reference's buy no more than the cap (2 x 0.3 + 0.05 = 0.65).
  in.null_ms = {3.0, 3.0, 3.0};
  KernelList forged = {{"fused_kernel", 100 * kUs}};
  WorkerTimeline f = Timeline(
      5, [&](int) { return forged; }, &forged);
  in.timeline = &f;
  v = JudgeCandidateTiming(in);
  EXPECT_EQ(v.source, "supervisor");
  EXPECT_NEAR(v.metadata["timing_harness_overhead_ms"].get<double>(), 0.65, 1e-9);
  EXPECT_NEAR(v.stats.median, 3.5 - 0.65 - 0.1 - 0.175, 1e-9);
}

TEST(JudgeCandidateTimingTest, TimelineMissingCallsFallsBackToTheSupervisor) {
  KernelList call = {{"fused_kernel", 100 * kUs}};
  WorkerTimeline t = Timeline(
      2, [&](int) { return call; }, &call);  // only calls 0 and 1 of 4
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {0.15, 0.15, 0.16, 0.14}, 0.2, 0.04);
  in.code = kFusedCode;
  in.grad_ran = true;
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_EQ(v.source, "supervisor");
  EXPECT_THAT(v.metadata["timeline_problem"].get<std::string>(), HasSubstr("2 of 4"));
  EXPECT_NEAR(v.stats.median, 0.11, 1e-9);
  EXPECT_FALSE(v.decoy);  // nothing is judged from a stream that lost calls
  EXPECT_FALSE(v.metadata.contains("num_custom_kernels"));
}

TEST(JudgeCandidateTimingTest, UnusableOrAbsentTimelineFallsBackToTheSupervisor) {
  StreamBuilder b;
  b.Call(KGYM_PHASE_TIMING, 0, 1000, {{"fused_kernel", 100 * kUs}});
  WorkerTimeline unflushed = b.Finish(/*flush=*/false);
  CandidateTimingInputs in = Inputs(unflushed, {0.15}, 0.2, 0.04);
  in.code = kFusedCode;
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_EQ(v.source, "supervisor");
  EXPECT_EQ(v.metadata["timeline_problem"], unflushed.problem);
  EXPECT_NEAR(v.stats.median, 0.11, 1e-9);

  in.timeline = nullptr;
  v = JudgeCandidateTiming(in);
  EXPECT_EQ(v.source, "supervisor");
  EXPECT_THAT(v.metadata["timeline_problem"].get<std::string>(), HasSubstr("recorder"));
}

TEST(JudgeCandidateTimingTest, NoReferenceTimelineReportsTheBrackets) {
  KernelList call = {{"fused_kernel", 100 * kUs}};
  WorkerTimeline t = Timeline(
      3, [&](int) { return call; }, &call);
  ASSERT_TRUE(t.ok) << t.problem;
  CandidateTimingInputs in = Inputs(t, {0.3, 0.5, 0.4}, -1, 0.05);
  in.code = kFusedCode;
  in.grad_ran = true;
  CandidateTimingVerdict v = JudgeCandidateTiming(in);
  EXPECT_EQ(v.source, "supervisor");
  EXPECT_THAT(v.stats.samples_ms, ElementsAre(0.3, 0.5, 0.4));  // the brackets themselves, no overhead taken off
  EXPECT_DOUBLE_EQ(v.stats.median, 0.4);
  EXPECT_TRUE(v.metadata.contains("timeline_problem"));
  EXPECT_FALSE(v.metadata.contains("timing_harness_overhead_ms"));
  EXPECT_FALSE(v.hacked);
}

}  // namespace
}  // namespace kgym
