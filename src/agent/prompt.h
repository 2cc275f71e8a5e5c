// Prompt templates of the kernel agent (research/drkernel.md §4.1-4.2). The first-turn template is the
// Dr.Kernel one-shot Triton prompt the DR.Kernel models were trained on, kept byte-exact in
// templates/first_turn.txt with the placeholders {example_ref_code}, {example_kernel_code} and {ref_code};
// the refinement template (templates/refinement.txt) wraps the rendered server feedback in {feedback}.
//
// Substitution is single-pass, like Python's str.format: text inserted for a placeholder is never scanned
// again, so reference code containing braces is inserted verbatim.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace kgym::agent {

struct PromptTemplates {
  std::string first_turn;
  std::string example_ref_code;
  std::string example_kernel_code;
  std::string refinement;

  // Loads the four files from `dir`; an empty `dir` gives the templates compiled into kgym (src/agent/templates).
  static Status Load(const std::string& dir, PromptTemplates* out);
};

// Replaces every {name} of `vars` in `tmpl` in one left-to-right pass. Unknown {...} text is kept.
std::string RenderTemplate(const std::string& tmpl, const std::map<std::string, std::string>& vars);

// The first user message for a task whose reference code is `ref_code`.
std::string RenderFirstTurn(const PromptTemplates& t, const std::string& ref_code);

// The user message that follows a turn whose rendered feedback is `feedback`.
std::string RenderRefinement(const PromptTemplates& t, const std::string& feedback);

// Hook that may rewrite a task's first-turn prompt before it is sent (e.g. skill injection). Arguments: the
// task id, its reference code, the sample index (-1 when no trajectory is run, e.g. --print-prompt), the rendered
// prompt, and `note`, an object the hook may fill; a non-empty note is stored in the trajectory record under
// "first_turn". Returns the prompt to send. Called from many trajectory threads at once.
using FirstTurnRewriter = std::function<std::string(const std::string& task_id, const std::string& ref_code, int sample,
                                                    const std::string& prompt, nlohmann::json* note)>;

}  // namespace kgym::agent
