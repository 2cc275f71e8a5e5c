// The conversation between the supervisor and one worker, over the worker's private channel (sandbox/channel.h
// frames it): every message kind, which way it travels, and the fields of its JSON header. This file and
// python/kgym_harness/protocol.py are the two halves of one definition; tests/py/test_protocol.py checks that they
// agree, and that neither side spells a message kind outside them.
//
// One session, in order:
//   worker      hello                              (sandbox applied, CUDA context made on a GPU worker)
//   supervisor  job                                (the code to load; the seeds, for the reference)
//   reference   init, trial_result per trial (a default trial's with its fp64 oracle, eval/precision.h), pool_set per
//               timing set the byte budget allows, ready
//   candidate   ready (module loaded, model built), then per trial: trial -> trial_result, per set: pool_set -> ok
//   supervisor  finish (the worker answers bye and exits), or timing -> ok and then, in any order:
//               call -> armed, go -> done     one timed call; the supervisor's clock runs from its go to the done
//               null -> armed, go -> done     the harness's own tiny call (the process's overhead per call)
//               burst -> armed, go -> done    k calls (or k flushes) back to back, one synchronisation
//               fetch -> outputs              the last call's outputs
//               fetch (keep) -> kept          or a device copy of them, held (keep_mb, keep_free) until...
//               fetch_kept -> outputs         ...asked for, after the timed part (outside the timing lock)
//               detect -> detected            one call with autograd on (the decoy rule's second run)
//               timeline -> timeline          the kernel recorder's stream (as the payload)
//               finish -> bye
// Any worker reply may be preceded by evidence and note frames (WorkerSession collects them) and replaced by error,
// which ends the session. Tensors ride in the payload or as sealed memfds (field "regions", set by the channel),
// described by "tensors"; value lists ("init", "inputs", "outputs") index into it (eval/tensor.h).
#pragma once

namespace kgym::protocol {

// Message kinds: the value of the field "type" of every header.
namespace kind {
// supervisor -> worker
inline constexpr char kJob[] = "job";
inline constexpr char kTrial[] = "trial";
inline constexpr char kPoolSet[] = "pool_set";  // both ways: a timing set to hold / the reference's set and outputs
inline constexpr char kTiming[] = "timing";
inline constexpr char kCall[] = "call";
inline constexpr char kGo[] = "go";
inline constexpr char kNull[] = "null";
inline constexpr char kBurst[] = "burst";
inline constexpr char kFetch[] = "fetch";
inline constexpr char kFetchKept[] = "fetch_kept";
inline constexpr char kDetect[] = "detect";
inline constexpr char kTimeline[] = "timeline";  // both ways: the request and the stream
inline constexpr char kFinish[] = "finish";
// worker -> supervisor
inline constexpr char kHello[] = "hello";
inline constexpr char kInit[] = "init";
inline constexpr char kTrialResult[] = "trial_result";
inline constexpr char kReady[] = "ready";
inline constexpr char kOk[] = "ok";
inline constexpr char kArmed[] = "armed";
inline constexpr char kDone[] = "done";
inline constexpr char kOutputs[] = "outputs";
inline constexpr char kKept[] = "kept";
inline constexpr char kDetected[] = "detected";
inline constexpr char kEvidence[] = "evidence";
inline constexpr char kNote[] = "note";
inline constexpr char kError[] = "error";
inline constexpr char kBye[] = "bye";
}  // namespace kind

// Header fields.
namespace field {
inline constexpr char kType[] = "type";
inline constexpr char kRegions[] = "regions";  // number of memfds passed with the frame (set by the channel)
inline constexpr char kTensors[] = "tensors";  // descriptors of the tensors the value lists refer to
// job
inline constexpr char kCode[] = "code";
inline constexpr char kClassName[] = "class_name";
inline constexpr char kDevice[] = "device";  // "cpu" or "cuda"
inline constexpr char kSize[] = "size";      // the task size (KGYM_TASK_SIZE)
inline constexpr char kInitSeed[] = "init_seed";
inline constexpr char kTrainMode[] = "train_mode";
inline constexpr char kTrials[] = "trials";  // reference: [{seed, variant}]
inline constexpr char kSeed[] = "seed";
inline constexpr char kVariant[] = "variant";  // "default", "signed" or "sparse"
inline constexpr char kPoolSeeds[] = "pool_seeds";
inline constexpr char kPoolBudgetBytes[] = "pool_budget_bytes";
inline constexpr char kReferenceBackend[] = "reference_backend";
inline constexpr char kAllowTf32[] = "allow_tf32";                // optional, default false
inline constexpr char kMeasureBandwidth[] = "measure_bandwidth";  // optional, default true
// values
inline constexpr char kInit[] = "init";
inline constexpr char kInputs[] = "inputs";
inline constexpr char kOutputs[] = "outputs";
inline constexpr char kOracle[] = "oracle";             // reference trial_result: fp64 values at sampled elements
inline constexpr char kOracleIndex[] = "oracle_index";  // ...their flat indices (an empty tensor: every element)
// trials and sets
inline constexpr char kIndex[] = "index";
inline constexpr char kSkipped[] = "skipped";  // the reference's output was not finite on this variant
inline constexpr char kTritonLaunches[] = "triton_launches";
inline constexpr char kTritonKernels[] = "triton_kernels";
inline constexpr char kWorkerS[] = "worker_s";  // trial_result: the worker's own seconds per step (reported only)
// trial, fetch_kept: the index (among the message's fds) of a buffer the supervisor lends for the reply's outputs
// (sandbox/shm.h, Region::Lent); the reply names it as the region after its own fds
inline constexpr char kOutRegion[] = "out_region";
// timing
inline constexpr char kFlushMb[] = "flush_mb";
inline constexpr char kKeepMb[] = "keep_mb";      // device memory the worker may hold for kept outputs
inline constexpr char kKeepFree[] = "keep_free";  // ...while this share of the device's memory stays free
inline constexpr char kKeep[] = "keep";           // fetch: a device copy may be kept instead of sent
inline constexpr char kCall[] = "call";           // the call's id (negative: warmup)
inline constexpr char kSet[] = "set";             // the input set to refill from
inline constexpr char kK[] = "k";                 // calls per burst
inline constexpr char kModel[] = "model";         // burst: model calls (true) or flushes alone
inline constexpr char kSelfMs[] = "self_ms";      // the worker's own clock (forgeable, reported only)
inline constexpr char kEventMs[] = "event_ms";    // the worker's CUDA events (forgeable, cross-checked)
inline constexpr char kError[] = "error";         // detected / timeline: what went wrong, if anything
// hello
inline constexpr char kRole[] = "role";
inline constexpr char kPid[] = "pid";
inline constexpr char kProtections[] = "protections";
inline constexpr char kRecorder[] = "recorder";  // "on", or why the kernel recorder is off
// evidence and note
inline constexpr char kItems[] = "items";  // evidence: [[kind, detail], ...]
inline constexpr char kKey[] = "key";
inline constexpr char kValue[] = "value";
// error
inline constexpr char kKind[] = "kind";    // an outcome name (compile_error, runtime_error, ...)
inline constexpr char kPhase[] = "phase";  // where it happened (load, init, correctness, timing, ...)
inline constexpr char kDetail[] = "detail";
inline constexpr char kTraceback[] = "traceback";
inline constexpr char kExtensionBuild[] = "extension_build";  // a CUDA extension failed to build
inline constexpr char kBuildLog[] = "build_log";
}  // namespace field

// Worker roles (the fork request's "role").
namespace role {
inline constexpr char kReference[] = "reference";
inline constexpr char kCandidate[] = "candidate";
inline constexpr char kProbe[] = "probe";  // says hello and exits (kgym doctor)
}  // namespace role

// The kinds of in-process evidence (items of an evidence message): facts the harness saw inside the candidate's
// process after a call. The supervisor words its verdict "hacked (<kind>)".
namespace evidence {
inline constexpr char kLazyTensor[] = "lazy tensor / subclass";
inline constexpr char kWrongDevice[] = "wrong device";
inline constexpr char kOutputAliasesInput[] = "output aliases input";
inline constexpr char kInputMutation[] = "input mutation";
inline constexpr char kPrecisionDowngrade[] = "precision downgrade";
inline constexpr char kThreadInjection[] = "thread injection";
inline constexpr char kStrayProcess[] = "stray process";
}  // namespace evidence

// Keys of note messages.
namespace note {
inline constexpr char kLoadS[] = "load_s";  // candidate: seconds spent importing its module
inline constexpr char kDeviceCopyBandwidthGbps[] = "device_copy_bandwidth_gbps";  // reference, GPU
inline constexpr char kReferenceBackendError[] = "reference_backend_error";       // torch.compile could not be applied
inline constexpr char kPrecisionLevels[] = "precision_levels";  // reference: its errors at TF32 / bf16 / fp16
inline constexpr char kOracleError[] = "oracle_error";          // reference: why there is no fp64 oracle
}  // namespace note

enum class Direction { kToWorker, kToSupervisor };

// One message kind as it travels one way, with the fields its header may carry besides "type" (space-separated).
struct MessageSpec {
  const char* kind;
  Direction direction;
  const char* fields;
};

inline constexpr MessageSpec kMessages[] = {
    {kind::kJob, Direction::kToWorker,
     "code class_name device size init_seed train_mode trials pool_seeds pool_budget_bytes reference_backend "
     "allow_tf32 measure_bandwidth init tensors"},
    {kind::kTrial, Direction::kToWorker, "index inputs tensors regions out_region"},
    {kind::kPoolSet, Direction::kToWorker, "inputs tensors regions"},
    {kind::kTiming, Direction::kToWorker, "flush_mb keep_mb keep_free"},
    {kind::kCall, Direction::kToWorker, "call set"},
    {kind::kGo, Direction::kToWorker, "call"},
    {kind::kNull, Direction::kToWorker, "call"},
    {kind::kBurst, Direction::kToWorker, "call set k model"},
    {kind::kFetch, Direction::kToWorker, "call set keep"},
    {kind::kFetchKept, Direction::kToWorker, "call regions out_region"},
    {kind::kDetect, Direction::kToWorker, ""},
    {kind::kTimeline, Direction::kToWorker, ""},
    {kind::kFinish, Direction::kToWorker, ""},
    {kind::kHello, Direction::kToSupervisor, "role pid protections recorder"},
    {kind::kInit, Direction::kToSupervisor, "init tensors regions"},
    {kind::kTrialResult, Direction::kToSupervisor,
     "index skipped triton_launches worker_s inputs outputs oracle oracle_index tensors regions"},
    {kind::kPoolSet, Direction::kToSupervisor, "index inputs outputs tensors regions"},
    {kind::kReady, Direction::kToSupervisor, "triton_kernels"},
    {kind::kOk, Direction::kToSupervisor, ""},
    {kind::kArmed, Direction::kToSupervisor, "call"},
    {kind::kDone, Direction::kToSupervisor, "call self_ms event_ms"},
    {kind::kOutputs, Direction::kToSupervisor, "call outputs tensors regions"},
    {kind::kKept, Direction::kToSupervisor, "call"},
    {kind::kDetected, Direction::kToSupervisor, "error"},
    {kind::kTimeline, Direction::kToSupervisor, "error"},
    {kind::kEvidence, Direction::kToSupervisor, "items"},
    {kind::kNote, Direction::kToSupervisor, "key value"},
    {kind::kError, Direction::kToSupervisor, "kind phase detail traceback extension_build build_log"},
    {kind::kBye, Direction::kToSupervisor, ""},
};

}  // namespace kgym::protocol
