#include "eval/worker_failure.h"

#include <signal.h>
#include <string.h>

#include <sstream>

#include "eval/extension_cache.h"
#include "sandbox/protocol.h"

namespace kgym {

namespace field = protocol::field;

namespace {

const char* SignalName(int sig) {
  const char* s = ::sigabbrev_np(sig);
  return s ? s : "?";
}

bool LooksOutOfMemory(const std::string& out) {
  for (const char* m : {"MemoryError", "out of memory", "Cannot allocate memory", "std::bad_alloc"})
    if (out.find(m) != std::string::npos) return true;
  return false;
}

}  // namespace

Verdict WorkerFailureVerdict(WorkerSession* w, const Status& s, const std::string& phase, const Deadline& dl,
                             bool is_reference) {
  const std::string who = is_reference ? "the reference" : "the candidate";
  if (w->cancelled()) {
    w->Kill();
    return Verdict::Of(Outcome::kInvalid, "cancelled");
  }
  if (s.code() == Status::Code::kTimeout) {
    w->Kill();
    std::ostringstream o;
    o << who << " exceeded the time limit of " << dl.limit_s << " s during " << phase;
    return Verdict::Of(is_reference ? Outcome::kInvalid : Outcome::kTimeout, o.str());
  }
  if (s.code() == Status::Code::kIOError) {  // this process's own reading or mapping failed
    w->Kill();
    return Verdict::System("the supervisor could not read " + who + "'s worker during " + phase + ": " + s.message());
  }
  WorkerExit e;
  const bool got = w->WaitExit(Clock::now() + std::chrono::seconds(3), &e);
  if (!got && w->orphaned())
    return Verdict::System(who + "'s worker died with its zygote during " + phase + " (" + s.message() + ")");
  const bool oom = LooksOutOfMemory(w->Output());
  const bool outside_kill = got && e.signaled && e.signal == SIGKILL && !w->killed();
  // A pristine reference worker neither breaks its channel nor is killed for its memory on purpose: either is
  // something that happened to it (the host's OOM killer, a broken harness), so it is retried, never kept.
  if (is_reference && !oom && (outside_kill || s.code() == Status::Code::kInvalidArgument)) {
    w->Kill();
    return Verdict::System(
        "the reference's worker " +
        (outside_kill ? "was killed from outside (SIGKILL)" : "broke its channel (" + s.message() + ")") + " during " +
        phase);
  }
  Outcome outcome = Outcome::kCrashed;
  std::ostringstream o;
  if (got && e.signaled && e.signal == SIGXCPU) {
    outcome = Outcome::kTimeout;
    o << who << " used up its CPU-time limit during " << phase;
  } else if (oom || outside_kill) {
    outcome = Outcome::kResourceExhausted;
    o << who << " ran out of memory during " << phase;
  } else if (got && e.signaled) {
    o << who << " was killed by signal SIG" << SignalName(e.signal) << " during " << phase;
  } else if (got) {
    o << who << " exited with status " << e.code << " during " << phase << " without a result";
  } else {
    o << who << " stopped answering during " << phase << " (" << s.message() << ")";
  }
  return Verdict::Of(is_reference ? Outcome::kInvalid : outcome, o.str());
}

Verdict HarnessErrorVerdict(WorkerSession* w, const nlohmann::json& header, const std::string& phase,
                            std::optional<std::string>* compilation_error, std::optional<std::string>* runtime_error) {
  const std::string fphase = header.value(field::kPhase, phase);
  const Outcome o = OutcomeFromName(header.value(field::kKind, "runtime_error")).value_or(Outcome::kRuntimeError);
  const std::string detail = header.value(field::kDetail, "");
  const std::string tb = header.value(field::kTraceback, "");
  if (o == Outcome::kCompileError && header.value(field::kExtensionBuild, false)) {
    // The compiler's first errors, from the exception's text or else (verbose builds print the compiler's output
    // rather than raising it) from the worker's captured output, once it has exited.
    std::string log = header.value(field::kBuildLog, "");
    std::string lines = CompilerErrorLines(log);
    WorkerExit e;
    if (lines.empty() && w->WaitExit(Clock::now() + std::chrono::seconds(3), &e))
      lines = CompilerErrorLines(log = w->Output());
    if (!lines.empty()) {
      *compilation_error = log;
      return Verdict::Of(o, lines + "\n(" + detail + ")");
    }
  }
  if (o == Outcome::kCompileError) {
    *compilation_error = tb.empty() ? detail : tb;
    return Verdict::Of(o, "compile error: " + detail);
  }
  if (o == Outcome::kResourceExhausted) {
    *runtime_error = tb;
    return Verdict::Of(o, "out of memory during " + fphase + ": " + detail);
  }
  *runtime_error = tb.empty() ? detail : tb;
  return Verdict::Of(o, (o == Outcome::kRuntimeError ? "exception in " + fphase + ": " : fphase + ": ") + detail);
}

}  // namespace kgym
