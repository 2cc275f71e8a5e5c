// The in-process EvalBackend: a kgym::Evaluator of this process.
#include "agent/eval_backend.h"
#include "eval/evaluator.h"

namespace kgym::agent {

namespace {
class InProcessBackend : public EvalBackend {
 public:
  InProcessBackend(std::unique_ptr<Evaluator> e, bool compat) : e_(std::move(e)), compat_(compat) {}
  std::string Describe() const override { return "in-process evaluator"; }
  Status Evaluate(const EvalRequest& req, nlohmann::json* result) override {
    EvalResult r = e_->Evaluate(req);
    if (r.outcome == Outcome::kInvalid && r.error_code == "SYSTEM_ERROR")
      return Status::Unavailable("evaluator system error: " + r.error_message);
    *result = r.ToJson(compat_);
    return Status::Ok();
  }

 private:
  std::unique_ptr<Evaluator> e_;
  bool compat_;
};
}  // namespace

Status MakeInProcessBackend(bool unsafe_no_sandbox, bool compat, std::unique_ptr<EvalBackend>* out) {
  EvaluatorOptions opt;
  opt.sandbox = !unsafe_no_sandbox;
  std::unique_ptr<Evaluator> e;
  Status s = Evaluator::Create(opt, &e);
  if (!s.ok()) return s;
  *out = std::make_unique<InProcessBackend>(std::move(e), compat);
  return Status::Ok();
}

}  // namespace kgym::agent
