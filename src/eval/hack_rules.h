// The hack rules: pure functions over the evidence one evaluation gathered. Each returns the Verdict
// "hacked (<rule>): <evidence>" when its evidence shows a hack, and nothing otherwise; a new rule is one function here
// and one test in hack_rules_test.cc. The evaluator (eval/candidate_run.cc) and the GPU timing judgement
// (eval/gpu_timing.cc) call them in a fixed order and stop at the first verdict.
//
// The evidence, and who could forge it:
// - in-process evidence: facts the harness reported from inside the candidate's process after a call (aliasing,
//   mutated inputs, changed backend flags, threads or processes left running). The candidate could switch those
//   checks off; the rules over outside evidence do not depend on them.
// - the outside watch (eval/process_watch.h): the worker process's thread counts and CPU time, read by the supervisor
//   from /proc around every call. Not forgeable from inside.
// - the correctness trials' outputs, compared by the supervisor, and the Triton launch counts of the harness's hooks.
// - the supervisor's brackets of the timed calls, on rotation sets and on sets never seen before (fresh).
// - the kernel timeline (GPU): written inside the worker, bounded by the brackets (eval/gpu_timing.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/precision.h"
#include "eval/process_watch.h"
#include "eval/tensor.h"
#include "eval/verdict.h"
#include "gpu/coverage.h"
#include "gpu/roofline.h"

namespace kgym {

// Threads started in the first calls of an evaluation may be a pool a library makes lazily on first use
// (torch.compile's Inductor starts its compile and progress threads in the call that compiles); threads started by
// later calls are not. The correctness phase lets its first kSettleCalls calls settle (WatchEvidence::settle_calls);
// the timing phase, whose calls come after those, none.
constexpr int kSettleCalls = 2;

// Channel tampering: the worker sent a malformed frame or an unsealed region (only a process that rewrote the
// harness's channel code does). `status` is what reading its reply returned.
std::optional<Verdict> ChannelTamperingRule(const Status& status, bool cancelled);

// True when the threads of the candidate's process that outlived its calls are an idle pool started in its first
// calls: calls watched after the settling ones, no thread count in them above the one they began with, and the
// threads born after hello used (median over those calls) no more than kIdleThreadCpuMs of CPU per call.
constexpr double kIdleThreadCpuMs = 0.05;
bool LingeringThreadsIdle(const WatchEvidence& watch);

// In-process evidence, [[kind, detail], ...] in the order seen: the first item decides, worded
// "hacked (<kind>)<when>: <detail>" (`when`: "" or " during timing"). Thread injection seen in-process stands only
// when the outside watch does not show the lingering threads idle (LingeringThreadsIdle): a thread name or a Python
// thread object can be forged, CPU time read from outside cannot.
std::optional<Verdict> InProcessEvidenceRule(const nlohmann::json& items, const WatchEvidence& watch,
                                             const std::string& when);

// Thread injection seen from outside: the thread count grew during at least kGrowthCalls of the calls after the
// settling ones (a thread per call, left running or finishing deferred work), whatever the in-process checks said.
constexpr int kGrowthCalls = 2;
std::optional<Verdict> ThreadGrowthRule(const WatchEvidence& watch, const std::string& when);

// Constant output: when the reference's outputs differ between trials, the candidate's must too. same_as_first[i]:
// the candidate's outputs of trial i are bit-identical to those of its first trial (entry 0 is not read).
std::optional<Verdict> ConstantOutputRule(const std::vector<const Values*>& reference_outputs,
                                          const std::vector<bool>& same_as_first);

// Precision downgrade seen in the outputs (eval/precision.h): under the strict policy, an output whose error against
// the fp64 oracle is past its budget (kBudgetRatio x the reference's own, at least the dtype's floor). The same verdict
// as a global backend flag changed in-process (InProcessEvidenceRule), whether the downgrade came from a flag or from
// inside a kernel (a Triton tl.dot in TF32, a bf16 GEMM). Under compat nothing is judged: the class is reported.
std::optional<Verdict> PrecisionDowngradeRule(const PrecisionJudgement& judgement, PrecisionPolicy policy);

// Decoy kernel (launch counts): a Triton candidate defines Triton kernels, none of which ran in `calls` correctness
// calls. `defined` are their names.
std::optional<Verdict> DecoyLaunchRule(const std::vector<std::string>& defined, int64_t launches, int calls);

// Deferred work: the CPU the candidate's process spends between timed calls (the harness's refill, the same code on
// the same inputs as for the reference) beyond the reference's process by more than max(kDeferFloorMs, twice the
// reference's): work forward did not do before it returned. Judged on medians, from kDeferMinSamples samples.
// The floor is the clock's noise on the 2-core CI VMs, not its resolution: with readings settled (eval/process_watch.h)
// an honest worker there still shows bursts of 1.8-2.0 ms of CPU in several consecutive windows, in the call and
// between calls alike (an honest relu: 0.2, 0.09, 1.78, 1.88, 1.80 ms between calls, its reference 0.16); work
// deferred past 3 ms a call is seen, less is not (on a GPU the kernel recorder sees device work after "done").
// On a GPU the harness waits for the refill's device work between calls on a blocking event (the thread sleeps), never
// with a spinning synchronisation: spinning costs CPU for as long as the device takes, which grows with whatever else
// shares the GPU, and once read 4.6 ms "between calls" on an honest candidate whose GPU was contended (issue 32).
constexpr double kDeferFloorMs = 3.0;
constexpr size_t kDeferMinSamples = 3;
std::optional<Verdict> DeferredWorkRule(const std::vector<double>& cpu_inside_ms,
                                        const std::vector<double>& cpu_between_ms, double reference_between_ms);

// A timed call returned a wrong result although the correctness trials passed (a cache keyed on pointers, or code
// that behaves differently once it thinks it is being timed). `problem` describes the call ("" = none).
std::optional<Verdict> WrongTimedResultRule(const std::string& problem);

// Caching on the supervisor's brackets: every call on a never-seen (fresh) input set is slower than four times the
// median of the rotation's calls and by more than kFreshMarginMs. Needs three fresh calls.
constexpr double kFreshMarginMs = 0.5;
std::optional<Verdict> FreshSetCachingRule(const std::vector<double>& fresh_ms, const std::vector<double>& rotation_ms);

// Caching on device time (GPU timeline): every fresh call keeps the device busy more than three times the rotation's
// median and by more than 20 us.
std::optional<Verdict> DeviceCachingRule(const std::vector<double>& fresh_busy_ms,
                                         const std::vector<double>& rotation_busy_ms);

// Decoy kernel (GPU timeline): the candidate's own kernels did not run both with grad off and on (gpu::JudgeUsage).
std::optional<Verdict> TimelineDecoyRule(const gpu::UsageVerdict& usage);

// Faster than physically possible: the candidate's time is below the roofline floor while the reference's is not (a
// task whose inputs need not all be read puts the reference below it too; then nothing is judged).
std::optional<Verdict> RooflineRule(const gpu::RooflineCheck& candidate, const gpu::RooflineCheck& reference);

}  // namespace kgym
