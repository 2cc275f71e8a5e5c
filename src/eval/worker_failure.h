// How a worker's failure becomes a verdict: a deadline passed, the worker died or was killed, it ran out of memory,
// or its harness reported an error frame (an exception in the candidate's code, a failed build). Every such end is
// an outcome a model can act on, worded for it.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "eval/verdict.h"
#include "sandbox/channel.h"
#include "sandbox/worker_session.h"

namespace kgym {

// The wall-clock limit of one evaluation.
struct Deadline {
  Clock::time_point at;
  double limit_s = 0;
};

// An exchange with `w` failed with `s` during `phase`: a cancel, the deadline, or the worker's end (signal, exit
// status, out of memory), told from the status, the worker's exit and its output. A reference's failure is never
// the candidate's: it comes out "invalid". What was not the worker's doing is a system error (Verdict::System:
// retried, never kept): this process's own I/O failing (IOError), the worker dying with its zygote, and for a
// reference a SIGKILL from outside or a broken channel. Kills the worker where it may still run.
Verdict WorkerFailureVerdict(WorkerSession* w, const Status& s, const std::string& phase, const Deadline& dl,
                             bool is_reference);

// The verdict for the harness's error frame `header` (kind, phase, detail, traceback, extension build log) from the
// candidate, during `phase` unless the frame names its own. The compiler's or the traceback's text goes to
// *compilation_error or *runtime_error (the candidate's facts, eval/candidate_facts.h).
Verdict HarnessErrorVerdict(WorkerSession* w, const nlohmann::json& header, const std::string& phase,
                            std::optional<std::string>* compilation_error, std::optional<std::string>* runtime_error);

}  // namespace kgym
