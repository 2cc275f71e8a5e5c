// Evaluator: runs one EvalRequest end to end and returns its EvalResult. This is the whole evaluation path
// below the scheduler: reference outputs from a pristine worker (cached), the candidate in a sandboxed worker
// forked from a warm zygote, the verdict and the timing statistics computed here in C++.
//
// Thread-safe: many Evaluate() calls may run at once (the server and the agent do). Timing phases on one
// device are serialised internally by a per-device TimingLock, so concurrent evaluations overlap only in their
// load/compile/correctness phases. Evaluate() never throws and never returns without a classified outcome;
// infrastructure failures (zygote died, no python) come back as Status errors from Create() or as
// outcome "invalid" with error_code SYSTEM_ERROR (eval/worker_failure.h says which failures count as such). A
// candidate whose channel broke inside a frame (what tampering looks like, and what a failure on the supervisor's
// side would look like) runs again on a fresh worker, once: that run decides, and metadata.candidate_rerun keeps the
// first one's verdict and the channel's error.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/evaluation.h"
#include "core/status.h"

namespace kgym {

struct AdmissionStats;  // sched/admission.h

constexpr int kAutoSpares = -1, kGpuSpares = 4;

struct EvaluatorOptions {
  std::string python;        // interpreter with torch; "" = PythonInterpreter() (core/runtime_files.h)
  std::string harness_path;  // directory holding the kgym_harness package; "" = PythonPackageDir()
  std::string scratch_root;  // where per-evaluation scratch dirs are made; "" = $TMPDIR/kgym-scratch
  // Build cache of CUDA-backend candidates, one directory per source hash (eval/extension_cache.h);
  // "" = <$TMPDIR or /tmp>/kgym-ext-cache.
  std::string extension_cache_root;
  bool sandbox = true;               // false only with --unsafe-no-sandbox
  int max_output_bytes = 64 * 1024;  // captured stdout/stderr tail kept per evaluation
  double default_memory_limit_gb = 16;
  std::vector<std::string> hidden_paths;  // directories the candidate must not see (store, config, ...)
  // Reference inputs/outputs kept in memory, least recently used dropped beyond this; 0 = 8 GiB (with a memory
  // budget, CreateEvaluatorWithBudget makes it a quarter of the budget).
  size_t reference_cache_bytes = 0;
  // Candidate workers per sandbox policy kept started ahead of need (sandbox set up, CUDA context made), so an
  // evaluation does not wait for them (eval/spare_pool.h: why one). 0 for one-shot use (kgym eval), where they would
  // be wasted work.
  // kAutoSpares: kGpuSpares for a GPU's policy, 1 for the CPU's. On an H100 (2026-12-07) most of 16 slots' candidates
  // waited for a fresh worker (~2.9 s under load) with one spare; workers are frozen by timed holds from their fork on,
  // so spares being made no longer slow timed calls.
  int spare_workers = kAutoSpares;
  // Other evaluations' device work outside the timing lock starts only between timed holds (eval/timing_lock.h:
  // quiet timing); off: it overlaps the timed calls (a GPU time-slices between processes).
  bool quiet_timing = false;
  // Exclusive device time: a timed hold freezes the other workers of its device (eval/timing_lock.h). Off: they run on
  // beside the timed calls.
  bool freeze_neighbours = true;
  // The precision policy of requests that name none (EvalRequest::precision): "strict" or "compat".
  std::string precision = "strict";
  // Adaptive trials' floor for requests that name none (EvalRequest::min_perf_trials; 0 = off).
  int min_perf_trials = 20;
  // Output buffers lent to each candidate's worker where its outputs take 1 MiB or more (eval/lent_buffers.h); 0 =
  // none (the worker makes a memfd per reply).
  int lent_buffers = 3;
  // libkgym_cupti.so, the kernel recorder loaded into GPU workers; "" = $KGYM_CUPTI_LIB or found next to the binary,
  // "off" = none (GPU times are then the supervisor's brackets). Never loaded where no GPU is visible.
  std::string cupti_library;
};

// The recorder library to use for `given` (see EvaluatorOptions::cupti_library): a path, or "" for none.
std::string FindCuptiLibrary(const std::string& given);

// Called with phase names ("queued", "reference", "load", "correctness", "timing", "profile", "done") as
// the evaluation advances; used for server-sent progress. May be called from another thread.
using ProgressFn = std::function<void(const std::string& phase)>;

// Hex key of a request's reference configuration (reference code, entry point, device, size, trial counts,
// warmup, backend, mode): requests with equal keys share one reference run and have the same footprint.
std::string ReferenceKey(const EvalRequest& req);

class Evaluator {
 public:
  static Status Create(const EvaluatorOptions& options, std::unique_ptr<Evaluator>* out);
  virtual ~Evaluator() = default;

  // Evaluates `req`. If `cancel` becomes true the worker is killed and the result is outcome "invalid" with
  // error_message "cancelled".
  virtual EvalResult Evaluate(const EvalRequest& req, const ProgressFn& progress = {},
                              const std::atomic<bool>* cancel = nullptr) = 0;

  // Computes the reference data of `req` (device and device_index filled in) into the reference cache ahead of the
  // evaluations that will need it, or waits for a computation of it already under way. Returns true when the data
  // is there; false when it was not made (no room, cancelled, or its computation failed: a failure is not kept, the
  // evaluations meet it again). `cancel` ends a wait for memory (sched/admitted_evaluator.h). The default makes
  // nothing.
  virtual bool PrepareReference(const EvalRequest& req, const std::atomic<bool>* cancel = nullptr) {
    (void)req;
    (void)cancel;
    return false;
  }

  // The reference configurations `owner` (a device's scheduler) will ask for soon, as ReferenceKey gives them: its
  // running jobs' and the next ones queued for it. Kept in the reference cache while wanted, even past its budget
  // (eval/reference_cache.h): a 39 GB reference dropped while a second evaluation of it waited for memory was
  // computed again (16 s). Replaces the owner's earlier set. The default does nothing.
  virtual void WantReferences(const std::string& owner, const std::set<std::string>& keys) {
    (void)owner;
    (void)keys;
  }

  // For the end of a process (a server's shutdown): every running evaluation's workers are killed now, reference
  // runs included (they are shared by every request for that reference, so a single request's cancel leaves them
  // running), and later evaluations fail at once. The default does nothing.
  virtual void CancelAll() {}

  // Names of the devices this evaluator can use ("cpu", "cuda:0", ...), for health and worker status.
  virtual std::vector<std::string> Devices() const = 0;

  // Forks a probe worker under the candidate policy and reports which protections took effect, which are
  // missing and why (for `kgym doctor`). The default implementation reports nothing.
  virtual nlohmann::json Doctor() { return nlohmann::json::object(); }

  // Reference data kept between evaluations (the reference cache) as (key, bytes); memory admission counts it as
  // held. The keys are the results' metadata "reference_cache_key". The default keeps nothing.
  virtual std::vector<std::pair<std::string, uint64_t>> CachedReferences() { return {}; }
  // For a cached reference configuration, what one of its evaluations holds in this process beyond the reference
  // data, at most: the candidate's outputs held at once and a worker as large as the reference's was (memory
  // admission's estimate before the configuration's first evaluation has measured its own). 0 = not cached.
  virtual uint64_t CachedReferencePrivateBytes(const std::string& key) {
    (void)key;
    return 0;
  }

  // Memory-admission counters, for an evaluator that admits evaluations by memory (sched/admitted_evaluator.h);
  // false for one that does not.
  virtual bool Admission(AdmissionStats* out) {
    (void)out;
    return false;
  }
};

}  // namespace kgym
