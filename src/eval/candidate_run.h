// RunCandidate: the candidate's run against the reference data of its configuration, phase by phase:
//   start        a sandboxed worker (the spare for its policy when one is ready); refuses to run unsealed unless the
//                request says --unsafe-no-sandbox
//   load         the job: the candidate's module imported, ModelNew built with the reference's constructor arguments
//   correctness  every trial's inputs (the reference's own memfds, shared without a copy) in, outputs compared here
//                with the reference's (each comparison while the next trial runs; the first wrong trial decides);
//                then the rules over in-process evidence, threads, constant output and decoy launches
//                (eval/hack_rules.h)
//   timing       the reference's timing sets; TimedCalls under the device's TimingLock, with the decoy rule's
//                grad-enabled call; the kept outputs compared after the lock; the kernel timeline (GPU)
//   judge        the rules over the timing evidence (in-process evidence, deferred work, threads, wrong timed
//                results, caching), then the reported time (eval/gpu_timing.h on a GPU, the brackets on the CPU)
// Each phase either passes or ends the run with a Verdict, which is applied to *r; every phase that ran leaves its
// facts (eval/candidate_facts.h, written into r->metadata by their one writer when the run ends), and the worker's
// output tail is kept whenever a worker ran. What other rooms act on is typed in r->signals: a broken channel (the
// evaluator's rerun) and the worker's peak memory (memory admission). The phases live in candidate_run.cc, the
// correctness phase in candidate_correctness.cc; the type they share is candidate_run_impl.h.
#pragma once

#include <atomic>

#include "eval/evaluator.h"
#include "eval/reference.h"
#include "eval/run_context.h"
#include "eval/worker_failure.h"

namespace kgym {

void RunCandidate(const EvalRequest& req, const ReferenceData& ref, const Deadline& dl, const RunContext& ctx,
                  const ProgressFn& progress, const std::atomic<bool>* cancel, EvalResult* r);

}  // namespace kgym
