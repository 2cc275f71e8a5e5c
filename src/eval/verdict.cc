#include "eval/verdict.h"

namespace kgym {

Verdict Verdict::Hacked(std::string_view rule, std::string_view evidence) {
  std::string d = "hacked (";
  d.append(rule);
  d += "): ";
  d.append(evidence);
  return {Outcome::kHacked, std::move(d), ""};
}

bool Verdict::decoy() const { return hacked() && detail.find("decoy") != std::string::npos; }

void Verdict::ApplyTo(EvalResult* r) const {
  r->outcome = outcome;
  r->outcome_detail = detail;
  if (correct()) return;
  r->correctness = false;
  r->speedup = 0;
  r->decoy_kernel = decoy();
  r->error_code = error_code.empty() ? ErrorCodeFor(outcome) : error_code;
  r->error_message = detail;
}

}  // namespace kgym
