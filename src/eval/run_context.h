// What the runs of one evaluation (eval/reference_run.h, eval/candidate_run.h) get from the evaluator that hosts
// them: workers, the device's timing lock, the cancel of the whole evaluator, the secret the seeds come from.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/evaluation.h"
#include "core/status.h"
#include "eval/extension_cache.h"
#include "eval/precision.h"
#include "eval/timing_lock.h"
#include "sandbox/worker_session.h"

namespace kgym {

// Where workers come from: forked from the evaluator's zygote under the sandbox policy the evaluator builds for the
// request and the role. Thread-safe.
class WorkerSource {
 public:
  virtual ~WorkerSource() = default;
  virtual Status StartReference(const EvalRequest& req, Clock::time_point deadline,
                                std::unique_ptr<WorkerSession>* out) = 0;
  // `extension_dir`: the CUDA backend's build cache for this source ("" = none). `*how` says where the worker came
  // from (metadata.candidate_worker): "spare", "spare_waited" or "fresh".
  virtual Status StartCandidate(const EvalRequest& req, const std::string& extension_dir, Clock::time_point deadline,
                                std::unique_ptr<WorkerSession>* out, std::string* how) = 0;
};

struct RunContext {
  WorkerSource* workers = nullptr;
  TimingLock* timing = nullptr;
  ExtensionCache* extension_cache = nullptr;
  const std::atomic<bool>* cancel_all = nullptr;         // the evaluator is shutting down: every worker is killed
  uint64_t secret = 0;                                   // per evaluator: the seeds of inputs and of the timing plan
  bool sandbox = true;                                   // unsealed runs only with --unsafe-no-sandbox
  int lent_buffers = 3;                                  // per candidate (eval/lent_buffers.h); 0 = none
  PrecisionPolicy precision = PrecisionPolicy::kStrict;  // for requests that do not name one (eval/precision.h)
  int min_perf_trials = 20;  // adaptive trials' floor for requests that do not name one (eval/adaptive_trials.h)
};

}  // namespace kgym
