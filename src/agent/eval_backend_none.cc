// Built when the kgym_eval library is absent: only --server evaluation is possible.
#include "agent/eval_backend.h"

namespace kgym::agent {

bool InProcessEvaluatorAvailable() { return false; }

Status MakeInProcessBackend(bool, bool, std::unique_ptr<EvalBackend>*) {
  return Status::Unavailable("this kgym was built without the in-process evaluator; pass --server URL");
}

}  // namespace kgym::agent
