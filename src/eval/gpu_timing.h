// The evaluator's use of the CUPTI kernel timeline (src/gpu): fetching a worker's record stream, the per-call
// device spans of its timed calls, which time is reported, coverage, the decoy rule and the roofline check.
//
// Trust: the record stream is written inside the worker's process, so for a candidate it is evidence that can be
// forged, like any in-process profiler's. What it may change is bounded by what the supervisor sees itself: a
// candidate's runtime is never less than the supervisor's own bracket of the call minus the harness overhead
// measured the same way on the reference (RuntimeFromTimeline), and a missing or broken stream falls back to that
// bracket. Coverage and the decoy rule use the stream as it is (as Dr.Kernel's profiler did), with kernel names
// taken from the candidate's source by the supervisor, not from the candidate's process.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/evaluation.h"
#include "core/status.h"
#include "gpu/coverage.h"
#include "gpu/cupti_format.h"
#include "gpu/kernel_timeline.h"
#include "gpu/record_stream.h"
#include "sandbox/channel.h"

namespace kgym {

class WorkerSession;

struct WorkerTimeline {
  bool ok = false;      // a stream came back, parsed, and the recorder reported no failure or lost records
  std::string problem;  // why not, a sentence (empty when ok)
  size_t bytes = 0;
  gpu::RecordStream records;
  gpu::KernelTimeline timeline;
};

// Parses a stream as hostile bytes (a cut tail is allowed: the worker caps what it sends). `worker_error` is what
// the worker said went wrong while collecting ("" when nothing).
WorkerTimeline TimelineFromBytes(std::string_view bytes, const std::string& worker_error);

// Asks the worker for its stream (message "timeline") and parses it. A worker without a recorder answers with an
// empty stream and its reason; that is a WorkerTimeline with ok == false, not an error Status.
Status FetchTimeline(WorkerSession* w, Clock::time_point deadline, WorkerTimeline* out);

// Device time of timed calls 0..n-1 (phase TIMING), in ms, in call order. `missing` counts calls with no record at
// all (no begin marker, nothing launched): a stream that lost its calls.
struct TimedSpans {
  std::vector<double> span_ms;    // first start to last end over all streams
  std::vector<double> busy_ms;    // union of the operations' intervals
  std::vector<double> kernel_ms;  // sum of kernel durations
  int missing = 0;
  int empty = 0;                       // calls present with no device operation at all
  std::set<std::string> kernel_names;  // raw names of every kernel the timed calls ran
};
// `first` offsets the call ids: the fresh-set calls of TimedCalls are ids n..n+fresh-1.
TimedSpans SpansOfTimedCalls(const gpu::KernelTimeline& t, int n, int first = 0);

// Per-call diagnostics of calls first..first+n-1 (KGYM_TRACE_TIMING=1 puts them in the metadata): span_ms, launch_ms
// (begin marker to the first operation's start: host time before the device starts), drain_ms (end marker, when
// forward returned on the host, to the last operation's end). Device clock throughout; null where a call has no
// record.
nlohmann::json TimingTrace(const WorkerTimeline& t, int n, int first = 0, uint32_t phase = KGYM_PHASE_TIMING);

// KGYM_TRACE_TIMING=1: a worker's whole per-call trace (the supervisor's brackets, the worker's self and event
// times, the null calls' brackets, and, with a usable timeline `t`, TimingTrace of the timed and null calls);
// null when tracing is off.
nlohmann::json TimingTraceIfAsked(const WorkerTimeline* t, const std::vector<double>& bracket_ms,
                                  const std::vector<double>& self_ms, const std::vector<double>& event_ms,
                                  const std::vector<double>& null_ms);

// The model's cost per call in pipelined bursts (eval/timed_calls.h): (the fastest model burst less the
// flush-only bursts' median) / k, from the supervisor's brackets only. `ref_null_burst_ms` > 0 caps the flush-only
// median at 1.5x the reference process's + 50 us, so a process that slows its own flushes buys little. < 0: none.
double BurstPerCallMs(const std::vector<double>& model_ms, const std::vector<double>& null_ms, int k,
                      double ref_null_burst_ms);

// Which time a candidate gets. `span_ms` is its timeline median (< 0: no usable timeline), `bracket_ms` the median
// of the supervisor's go->done brackets, `overhead_ms` the harness's own cost per call in the same process (the
// median bracket of its null calls: IPC, a launch, the synchronisation), `host_ms` the host time outside the
// kernels that the reference itself needed per call (its median bracket less its span and its own null calls).
// What the supervisor saw of the call is bracket - overhead; the timeline wins unless it is shorter than that by
// more than host_ms plus a noise allowance (max(50 us, 5 % of the bracket)). A shorter span is raised to that
// floor: a forged or partial stream gains at most the allowance, and host work the kernels do not cover (a slow
// launch path, work done on the CPU) is charged beyond what the reference's own needed. Without a timeline the
// time is bracket - overhead - host_ms.
// `burst_ms` (>= 0: BurstPerCallMs) relaxes that floor where pipelined calls show the device time: to the larger
// of burst_ms less the allowance and the floor less 10 % of the bracket (never raised by it). An honest kernel
// behind a slow launch path (a Triton launcher on a slow host) keeps its span; a forger must also fake the bursts
// and still gains at most that 10 %.
struct RuntimeChoice {
  double runtime_ms = 0;
  double floor_ms = 0;  // the least time the supervisor's bracket allows (what a shorter span is raised to)
  std::string source;   // "timeline" or "supervisor"
  std::string why;      // a sentence when the supervisor's time was used
};
RuntimeChoice RuntimeFromTimeline(double span_ms, double bracket_ms, double overhead_ms, double host_ms = 0,
                                  double burst_ms = -1);
double RuntimeAllowanceMs(double bracket_ms);

// Kernels compiled from the candidate, found in its source by the supervisor: Triton functions (a def under a
// decorator naming jit, autotune or heuristics) and CUDA __global__ functions (load_inline sources are strings in
// the file). Names that also ran in the reference (library kernels) are dropped, so a candidate cannot claim
// PyTorch's kernels by naming a function after one. `found` receives the names kept.
gpu::CandidateKernelNames CandidateKernelsFromSource(const std::string& code,
                                                     const std::set<std::string>& reference_kernels,
                                                     std::vector<std::string>* found);

// What the reference's timeline contributes to every candidate's judgement (kept with the cached reference).
struct ReferenceDeviceTiming {
  double span_median_ms = -1;  // < 0: the reference has no usable timeline (candidates then get brackets only)
  double gap_ms = 0;           // median bracket minus median span: the harness's overhead per call
  double null_ms = 0;          // median bracket of the harness's null calls in its process (0: none were made)
  double null_burst_ms = 0;    // median bracket of its flush-only bursts (0: none were made)
  std::set<std::string> kernel_names;
  double bytes_moved = 0;     // inputs read once + outputs written once, of one timing set
  double bandwidth_gbps = 0;  // device copy bandwidth measured in the reference's process (0: unknown)
};

struct CandidateTimingInputs {
  const WorkerTimeline* timeline = nullptr;  // null: the candidate had no recorder
  std::vector<double> bracket_ms;            // the supervisor's brackets of timed calls 0..n-1
  std::vector<double> event_ms;              // the worker's CUDA-event times of the same calls (forgeable)
  std::vector<double> null_ms;               // the supervisor's brackets of the harness's null calls, same process
  std::vector<double> burst_ms;              // the supervisor's brackets of pipelined model bursts, same process
  std::vector<double> null_burst_ms;         // ... and of the flush-only bursts
  int burst_k = 0;                           // calls per burst (0: no bursts)
  int first_call = 0;                        // the timed calls' ids: first_call..first_call+n-1
  int fresh_calls = 0;                       // calls fresh_first.. ran on input sets used once each
  int fresh_first = -1;                      // < 0: first_call + n
  // Timed calls that shared the device (eval/contention.h; empty: none known): left out of every series judged.
  std::vector<bool> shared;
  ReferenceDeviceTiming ref;
  std::string code;
  std::string backend = "triton";
  bool detect_decoy = true;
  bool grad_ran = false;         // the grad-enabled detection call ran (DETECT_GRAD)
  std::string grad_error;        // why it failed, when it did
  double coverage_floor = 0.0;   // time coverage below this is reported
  double roofline_margin = 0.5;  // flagged below floor * (1 - margin)
  double crosscheck_threshold = 0.10;
};

struct CandidateTimingVerdict {
  TimingStats stats;   // the reported series (timeline spans, or brackets less the harness overhead)
  std::string source;  // "timeline" or "supervisor"
  bool hacked = false;
  std::string detail;  // "hacked (...): ..." when hacked
  bool decoy = false;
  // Judged without bursts, the span fell below the single calls' floor: bursts (TimedBursts) could lower that floor,
  // so the caller may run them and judge again. Where the span is at or above it they cannot change the time.
  bool bursts_could_lower = false;
  nlohmann::json metadata = nlohmann::json::object();  // merged into the result's metadata
};

// Everything the evaluator decides from a correct candidate's timeline: the reported time, the cross-check of
// span, events and brackets, the caching rule on device time (fresh-set calls against the rotation), coverage and
// KernelGYM's coverage keys, the decoy rule (Triton: its kernels must run with grad off (the timed calls) and on (the
// detection call)), and the roofline floor (flagged only where the reference itself respects it, so a task whose inputs
// need not all be read cannot trip it).
CandidateTimingVerdict JudgeCandidateTiming(const CandidateTimingInputs& in);

}  // namespace kgym
