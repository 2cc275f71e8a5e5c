// Verdict: how the supervisor ends one evaluation: an outcome, the sentence that says why (what a model reads as
// feedback), and the error code when the fault is the system's. Every phase of an evaluation and every hack rule
// (eval/hack_rules.h) that decides the evaluation returns one; the evaluator applies it to the result once.
//
// Hacks are always worded "hacked (<rule>): <evidence>", so the rule that fired can be read off outcome_detail (the
// red-team tests and KernelGYM's decoy flag do).
#pragma once

#include <string>
#include <string_view>

#include "core/evaluation.h"

namespace kgym {

struct Verdict {
  Outcome outcome = Outcome::kCorrect;
  std::string detail;
  std::string error_code;  // "" = the outcome's own (ErrorCodeFor); "SYSTEM_ERROR" for infrastructure failures

  static Verdict Of(Outcome outcome, std::string detail) { return {outcome, std::move(detail), ""}; }
  // "hacked (<rule>): <evidence>".
  static Verdict Hacked(std::string_view rule, std::string_view evidence);
  // Outcome "invalid" with error code SYSTEM_ERROR: nothing the candidate (or the reference) did.
  static Verdict System(std::string detail) { return {Outcome::kInvalid, std::move(detail), "SYSTEM_ERROR"}; }

  bool correct() const { return outcome == Outcome::kCorrect; }
  bool hacked() const { return outcome == Outcome::kHacked; }
  bool decoy() const;  // a hack by a decoy kernel (KernelGYM's decoy_kernel flag)

  // Writes outcome and outcome_detail. Any outcome but correct also clears correctness and the speedup, and sets
  // error_code (this verdict's, else ErrorCodeFor) and error_message.
  void ApplyTo(EvalResult* r) const;
};

}  // namespace kgym
