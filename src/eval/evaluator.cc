// The evaluator: its zygote, reference cache, timing locks and spare workers, and the order of one evaluation
// (validate, reference, candidate). The phases themselves are eval/reference_run.cc and eval/candidate_run.cc.
#include "eval/evaluator.h"

#include <unistd.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "core/runtime_files.h"
#include "eval/account.h"
#include "eval/candidate_run.h"
#include "eval/extension_cache.h"
#include "eval/lent_buffers.h"
#include "eval/reference_cache.h"
#include "eval/reference_run.h"
#include "eval/run_context.h"
#include "eval/spare_pool.h"
#include "eval/timing_lock.h"
#include "sandbox/policy.h"
#include "sandbox/protocol.h"
#include "sandbox/worker_session.h"
#include "sandbox/zygote.h"

namespace kgym {

namespace field = protocol::field;
namespace role = protocol::role;

namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Wall time per phase (metadata.phase_s), so where an evaluation's time goes is seen on every run. Advance() also
// reports the next phase to the caller's progress function.
class PhaseClock {
 public:
  PhaseClock(Clock::time_point t0, nlohmann::json* metadata, ProgressFn progress)
      : at_(t0), md_(metadata), progress_(std::move(progress)) {}
  void Advance(const std::string& next) {
    const Clock::time_point now = Clock::now();
    (*md_)["phase_s"][phase_] = Seconds(now - at_);
    phase_ = next;
    at_ = now;
    if (progress_) progress_(next);
  }

 private:
  std::string phase_ = "setup";
  Clock::time_point at_;
  nlohmann::json* md_;
  ProgressFn progress_;
};

class EvaluatorImpl : public Evaluator, public WorkerSource {
 public:
  explicit EvaluatorImpl(EvaluatorOptions o)
      : opt_(std::move(o)),
        ext_cache_(opt_.extension_cache_root),
        references_(opt_.reference_cache_bytes),
        timing_(opt_.quiet_timing, opt_.freeze_neighbours),
        spares_(std::max(1, opt_.spare_workers)) {
    std::random_device rd;
    secret_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }

  Status Init() {
    ZygoteOptions z;
    z.python = PythonInterpreter(opt_.python);
    z.harness_path = opt_.harness_path;
    if (!opt_.cupti_library.empty()) z.extra_env["KGYM_CUPTI_LIB"] = opt_.cupti_library;
    return Zygote::Start(z, &zygote_);
  }

  nlohmann::json Doctor() override;
  std::vector<std::string> Devices() const override;
  EvalResult Evaluate(const EvalRequest& req, const ProgressFn& progress, const std::atomic<bool>* cancel) override;
  void CancelAll() override { cancel_all_ = true; }
  bool PrepareReference(const EvalRequest& req, const std::atomic<bool>* cancel) override;
  void WantReferences(const std::string& owner, const std::set<std::string>& keys) override {
    references_.Want(owner, keys);
  }
  std::vector<std::pair<std::string, uint64_t>> CachedReferences() override { return references_.Held(); }
  uint64_t CachedReferencePrivateBytes(const std::string& key) override {
    auto ref = references_.Find(key);
    if (!ref) return 0;
    const uint64_t worker = ref->notes.value("reference_worker_peak_bytes", uint64_t{0});
    return HeldOutputBytes(*ref, opt_.lent_buffers) + (worker > 0 ? worker : ref->Bytes());
  }

  Status StartReference(const EvalRequest& req, Clock::time_point deadline,
                        std::unique_ptr<WorkerSession>* out) override {
    return Fork(role::kReference, Policy(req, role::kReference), TimingLock::DeviceOf(req), deadline, out);
  }
  Status StartCandidate(const EvalRequest& req, const std::string& extension_dir, Clock::time_point deadline,
                        std::unique_ptr<WorkerSession>* out, std::string* how) override;

 private:
  nlohmann::json Policy(const EvalRequest& req, const std::string& role, const std::string& extension_dir = "");
  // A worker for `device`, enlisted there while it lives (a timed hold of another run on the device freezes it).
  RunContext Context() {
    RunContext c{this, &timing_, &ext_cache_, &cancel_all_, secret_, opt_.sandbox, opt_.lent_buffers};
    ParsePrecisionPolicy(opt_.precision, &c.precision);
    c.min_perf_trials = opt_.min_perf_trials;
    return c;
  }
  Status Fork(const std::string& role, const nlohmann::json& policy, const std::string& device,
              Clock::time_point deadline, std::unique_ptr<WorkerSession>* out) {
    // Enlisted from its fork on (before its CUDA context is made), so a hold also stops a worker still starting.
    return WorkerSession::Start(zygote_.get(), {{"role", role}, {"policy", policy}}, deadline, out,
                                [&](WorkerSession* w) {
                                  if (auto e = timing_.Enlist(device, w); e)
                                    w->KeepUntilEnd(std::shared_ptr<void>(std::move(e)));
                                });
  }
  // Reference data, from the cache or a pristine worker; a reference that failed says so in its error_kind. Its
  // note "reference_prepared_by" says who computed it: "evaluation" or "look-ahead" (PrepareReference).
  // *made: whether this call computed it (each configuration's reference is timed once per server, however many
  // evaluations ask for it).
  std::shared_ptr<const ReferenceData> Reference(const EvalRequest& req, const Deadline& dl, const RunContext& ctx,
                                                 const char* prepared_by, bool* made = nullptr) {
    const std::string key = ReferenceKey(req);
    return references_.Get(key, [&] {
      if (made) *made = true;
      auto data = RunReference(req, key, dl, ctx);
      data->notes["reference_prepared_by"] = prepared_by;
      return data;
    });
  }

  EvaluatorOptions opt_;
  std::atomic<bool> cancel_all_{false};  // CancelAll(): reference workers watch it (candidates watch their own)
  ExtensionCache ext_cache_;
  std::unique_ptr<Zygote> zygote_;  // declared before the spares: they end before it goes
  uint64_t secret_ = 0;
  ReferenceCache references_;
  TimingLock timing_;
  SparePool<WorkerSession> spares_;
};

nlohmann::json EvaluatorImpl::Doctor() {
  nlohmann::json d;
  d["python"] = zygote_->Hello();
  std::unique_ptr<WorkerSession> w;
  Status s =
      Fork(role::kProbe, Policy(EvalRequest{}, role::kCandidate), "probe", Clock::now() + std::chrono::seconds(30), &w);
  if (!s.ok()) {
    d["error"] = s.ToString();
    return d;
  }
  d["protections"] = w->hello().value(field::kProtections, nlohmann::json::object());
  d["freezer"] = w->freeze_mode();  // how a timed hold stops the device's other workers
  d["missing"] = MissingProtections(d["protections"]);
  d["devices"] = Devices();
  return d;
}

std::vector<std::string> EvaluatorImpl::Devices() const {
  std::vector<std::string> d = {"cpu"};
  for (int i = 0; i < 64; ++i) {
    if (::access(("/dev/nvidia" + std::to_string(i)).c_str(), F_OK) != 0) break;
    d.push_back("cuda:" + std::to_string(i));
  }
  return d;
}

nlohmann::json EvaluatorImpl::Policy(const EvalRequest& req, const std::string& role,
                                     const std::string& extension_dir) {
  PolicyInputs in;
  in.enabled = opt_.sandbox && !req.unsafe_no_sandbox;
  in.cuda = req.device == "cuda";
  in.device_index = req.device_index;
  in.memory_limit_gb = req.memory_limit_gb > 0 ? req.memory_limit_gb : opt_.default_memory_limit_gb;
  in.timeout_s = req.timeout_s;
  in.hidden_paths = opt_.hidden_paths;
  in.role = role;
  in.extension_cache_dir = extension_dir;
  nlohmann::json p = BuildPolicy(in);
  if (in.cuda && !opt_.cupti_library.empty()) p["env"]["KGYM_CUPTI_LIB"] = opt_.cupti_library;
  return p;
}

// The spare for the request's policy when one is ready (or starting), else a fresh worker. With an extension cache
// directory (CUDA backend), always a fresh one: the directory is mounted when the worker is made, and it differs by
// source.
Status EvaluatorImpl::StartCandidate(const EvalRequest& req, const std::string& extension_dir,
                                     Clock::time_point deadline, std::unique_ptr<WorkerSession>* out,
                                     std::string* how) {
  const nlohmann::json policy = Policy(req, role::kCandidate, extension_dir);
  *how = "fresh";
  const int depth = opt_.spare_workers != kAutoSpares ? opt_.spare_workers : req.device == "cuda" ? kGpuSpares : 1;
  if (depth > 0 && extension_dir.empty()) {
    nlohmann::json key = policy;
    key.erase("scratch");  // every worker gets its own scratch directory
    *how = spares_.Take(
        key.dump(), deadline,
        [this, req](std::unique_ptr<WorkerSession>* w) {
          return Fork(role::kCandidate, Policy(req, role::kCandidate), TimingLock::DeviceOf(req),
                      Clock::now() + std::chrono::seconds(120), w);
        },
        out, depth);
    if (*out && (*out)->Alive()) return Status::Ok();
    out->reset();
    *how = "fresh";
  }
  return Fork(role::kCandidate, policy, TimingLock::DeviceOf(req), deadline, out);
}

bool DefinesEntryPoint(const EvalRequest& req) {
  return req.reference_code.find("class " + req.entry_point) != std::string::npos;
}

Deadline DeadlineFrom(Clock::time_point t0, double timeout_s) {
  return {t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s)), timeout_s};
}

// A kept reference counts as used now (its jobs are next). A new one is skipped where the cache has no room for it
// (as large as its largest entry) without dropping another: that one may be the reference of jobs still queued,
// which would then compute it again.
bool EvaluatorImpl::PrepareReference(const EvalRequest& req, const std::atomic<bool>* cancel) {
  if (cancel_all_ || (cancel && cancel->load()) || !DefinesEntryPoint(req)) return false;
  if (references_.Touch(ReferenceKey(req))) return true;
  if (!references_.RoomForAnother()) return false;
  const RunContext ctx = Context();
  return Reference(req, DeadlineFrom(Clock::now(), req.timeout_s), ctx, "look-ahead")->error_kind.empty();
}

EvalResult EvaluatorImpl::Evaluate(const EvalRequest& req, const ProgressFn& progress,
                                   const std::atomic<bool>* cancel) {
  EvalResult r;
  r.task_id = req.task_id;
  const Clock::time_point t0 = Clock::now();
  const Deadline dl = DeadlineFrom(t0, req.timeout_s);
  auto& md = r.metadata;
  md["device"] = TimingLock::DeviceOf(req);
  md["backend"] = req.backend;
  md["num_correct_trials"] = req.num_correct_trials;
  md["num_perf_trials"] = req.num_perf_trials;
  md["hardware"] = req.device == "cuda" ? "cuda" : "cpu";
  auto cancelled = [&](const std::string& detail) {
    r.outcome = Outcome::kInvalid;
    r.outcome_detail = detail;
    r.error_message = "cancelled";
    return r;
  };
  if (cancel_all_) return cancelled("cancelled (the evaluator is shutting down)");
  PhaseClock clock(t0, &md, progress);
  if (!DefinesEntryPoint(req)) {
    Verdict{Outcome::kInvalid, "the reference code defines no class " + req.entry_point, "VALIDATION_ERROR"}.ApplyTo(
        &r);
    return r;
  }
  const RunContext ctx = Context();
  clock.Advance("reference");
  bool made = false;
  auto ref = Reference(req, dl, ctx, "evaluation", &made);
  md["reference_cache_key"] = ref->key;
  md["reference_made_here"] = made;
  // What this evaluation holds in this process, for memory admission (sched/admitted_evaluator.h).
  md["host_memory"] = {{"reference_bytes", ref->Bytes()},
                       {"trial_output_bytes", HeldOutputBytes(*ref, opt_.lent_buffers)}};
  for (auto& [k, v] : ref->notes.items()) md[k] = v;
  if (!ref->error_kind.empty()) {
    Verdict{Outcome::kInvalid, ref->error_detail, ref->error_kind == "system" ? "SYSTEM_ERROR" : "VALIDATION_ERROR"}
        .ApplyTo(&r);
    const std::string& out = ref->error_output;
    md["reference_output"] = out.size() > 8000 ? out.substr(out.size() - 8000) : out;
    clock.Advance("done");
    md["phase_s"].erase("done");
    md["account"] = AccountFromMetadata(md);
    return r;
  }
  if (cancel && cancel->load()) return cancelled("cancelled");
  clock.Advance("load");
  const EvalResult before = r;
  const auto advance = [&](const std::string& next) { clock.Advance(next); };
  RunCandidate(req, *ref, dl, ctx, advance, cancel, &r);
  if (r.metadata.contains("channel_broken") && !(cancel && cancel->load()) && !cancel_all_) {
    // A channel broken inside a frame is what a tampering candidate looks like, and also what a failure on this
    // side of it would look like: the candidate runs again on a fresh worker, once, and that run decides.
    const nlohmann::json first = {{"outcome_detail", r.outcome_detail}, {"channel", r.metadata["channel_broken"]}};
    r = before;
    clock.Advance("load");
    RunCandidate(req, *ref, dl, ctx, advance, cancel, &r);
    r.metadata["candidate_rerun"] = first;
  }
  clock.Advance("done");
  md["phase_s"].erase("done");
  md["evaluation_s"] = Seconds(Clock::now() - t0);
  md["account"] = AccountFromMetadata(md);
  return r;
}

}  // namespace

std::string ReferenceKey(const EvalRequest& req) {
  std::ostringstream k;
  k << req.reference_code << '\0' << req.entry_point << '\0' << req.device << ':' << req.device_index << '\0'
    << req.size << '\0' << req.num_correct_trials << '\0' << req.num_perf_trials << '\0' << req.num_warmup << '\0'
    << req.reference_backend << '\0' << req.train_mode << '\0' << req.measure_performance;
  return ContentKey(k.str());
}

std::string FindCuptiLibrary(const std::string& given) {
  std::error_code ec;
  // Only where a GPU is visible: the CPU path never loads CUPTI.
  if (!std::filesystem::exists("/dev/nvidiactl", ec)) return "";
  std::string want = given;
  if (want.empty()) {
    if (const char* p = std::getenv("KGYM_CUPTI_LIB"); p) want = p;
  }
  if (want == "off" || want == "none") return "";
  if (!want.empty()) return std::filesystem::exists(want, ec) ? want : "";
  // Build layout (build/src/cli/kgym, build/src/gpu/), packed layout (dir/kgym, dir/lib/), installed (prefix/lib/).
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (auto cand : {exe / "../gpu/libkgym_cupti.so", exe / "lib/libkgym_cupti.so", exe / "../lib/libkgym_cupti.so",
                    exe / "../lib/kgym/libkgym_cupti.so"})
    if (std::filesystem::exists(cand, ec)) return std::filesystem::weakly_canonical(cand, ec).string();
  return "";
}

Status Evaluator::Create(const EvaluatorOptions& options, std::unique_ptr<Evaluator>* out) {
  EvaluatorOptions o = options;
  if (o.harness_path.empty()) o.harness_path = PythonPackageDir("kgym_harness");
  if (o.harness_path.empty())
    return Status::NotFound("cannot find the kgym_harness package (looked in " +
                            RuntimeSearchDescription("kgym_harness") + ")");
  o.cupti_library = FindCuptiLibrary(o.cupti_library);
  if (o.reference_cache_bytes == 0) o.reference_cache_bytes = size_t{8} << 30;
  auto impl = std::make_unique<EvaluatorImpl>(o);
  Status s = impl->Init();
  if (!s.ok()) return s;
  *out = std::move(impl);
  return Status::Ok();
}

}  // namespace kgym
