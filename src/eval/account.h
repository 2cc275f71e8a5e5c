// The account of one evaluation: where its wall time went, part by part, and what its device work was for, so the
// stage that limits a server's throughput is named by numbers (metadata.account; summed over a run by
// bench/gpu/gym_limit.py).
//
// Wall: parts that add up to `wall_s`, the evaluation's time from its acceptance to its result:
//   queue         waiting for a slot (the scheduler)          memory      waiting for memory admission
//   setup         validation                                  reference   the reference's data: cached, awaited or made
//   worker_start  a worker (spare or fresh) until its hello   load        the candidate's module imported, built
//   correctness   the trials, their comparisons               lock_wait   waiting for the device's timing lock
//   freeze        stopping and restarting the neighbours      hold        the timed calls under the lock (`hold_parts`)
//   kept_fetch    the kept outputs, fetched and compared after the lock
//   timing_sets   the reference's timing sets sent        timing_prepare  the worker readying its live inputs
//   timeline_fetch  the kernel recorder's stream fetched   finish          the worker's exit
//   timing_other  the rest of the timing phase (the judgement, bursts' waits)
// plus any phase the evaluator names that is not listed (a new phase is never lost from the sum). `frozen_s` is how
// long other holds kept this evaluation's worker frozen: it lies inside the parts above, not beside them.
//
// Device work (`gpu`, where the candidate's worker had the kernel recorder): the union of its operations' intervals by
// what they were for. Required work is what any evaluation of this candidate must run: the default correctness trials
// and the reported timed calls. Checking work is what this gym adds to be hard to fool: the signed and sparse trials,
// fresh-set calls, the decoy rule's grad call, bursts, timed calls of attempts timed again, warmups, null calls and
// drain probes, input refills and L2 flushes, kept copies. Transfers (host<->device copies: the trials' inputs and
// outputs, the timing sets, the kept outputs' fetches) are reported apart: every harness moves its data, and on
// level-1 sizes they outweigh the kernels. Load is the model's construction (before its first call).
// The recorder runs inside the candidate's process, so these numbers are an account, never evidence for a verdict.
// `reference_gpu_s` is the device work of the reference worker that made this evaluation's reference data (paid once
// per configuration and server; `reference_made_here` says whether this evaluation made it).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "gpu/kernel_timeline.h"

namespace kgym {

struct GpuWork {
  bool known = false;
  double correctness_s = 0;  // required: the default trials
  double timed_s = 0;        // required: the reported attempt's timed calls
  double checks_s = 0;       // other trials, fresh-set calls, detection, bursts, earlier attempts
  double harness_s = 0;      // warmups, null calls, probes, refills, flushes, device-to-device copies
  double transfers_s = 0;    // host<->device copies after the load: trial inputs and outputs, timing sets, kept outputs
  double load_s = 0;         // before the first call
  double Required() const { return correctness_s + timed_s; }
  double Checking() const { return checks_s + harness_s; }
  nlohmann::json ToJson() const;
};

// Which calls of a candidate's timeline were required: `default_trial[i]` for correctness trial i, and the timed
// calls `first_call` .. `first_call + timed_calls - 1` (the reported attempt's).
struct RequiredCalls {
  std::vector<bool> default_trial;
  int first_call = 0;
  int timed_calls = 0;
};
GpuWork GpuWorkOf(const gpu::KernelTimeline& t, const RequiredCalls& req);

// The account from an evaluation's metadata (phase_s, worker_start_s, timing_lock, timing_kept_fetch_s, frozen_s,
// gpu_work), written as metadata.account. Called where the evaluation ends.
nlohmann::json AccountFromMetadata(const nlohmann::json& md);

// A part of the wall time spent before the evaluator ran (queue, memory), added to metadata.account and its wall_s.
void AddToAccount(nlohmann::json* md, const char* part, double seconds);

}  // namespace kgym
