// SkillSelector: the selection agent (research/davinci.md §3) over an OpenAI-compatible endpoint, packaged as the
// agent's first-turn rewriter (`kgym agent --skills DIR`).
//
// Per task, on the first trajectory that needs it, `selections` single-turn calls are made (BM25 candidates,
// select_skills tool; names kept only when they exist in the library). Scheme j < selections injects call j's
// skills before the last "Optimize the architecture named Model"; scheme `selections` is the null scheme (plain
// prompt). Sample i of a task runs scheme i % num_schemes(), so --samples (k+1)*n gives daVinci's k+1 schemes with
// n rollouts each. A call that fails or cannot be parsed leaves its scheme without skills (like daVinci); an
// empty library makes no calls at all.
//
// What a trajectory got is written to its record's "first_turn" note: scheme, skills, the injected text, the
// un-injected prompt (what `kgym skills evolve` summarises and re-injects) and the selection call's reply.
//
// Thread-safe: Rewrite() is called from many trajectory threads; each task's calls run once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/chat_client.h"
#include "agent/prompt.h"
#include "skills/selection.h"
#include "skills/skill_library.h"

namespace kgym::skills {

struct SkillSelectorOptions {
  int selections = 3;              // k: selection calls (and injected schemes) per task
  bool null_scheme = true;         // add scheme k without skills
  agent::SamplingParams sampling;  // daVinci: temperature 1.0, 1024 new tokens
  SelectionOptions selection;
  bool send_tool_schema = true;  // pass select_skills as "tools" in the request (chat templates render it)
  int64_t library_step = -1;     // recorded in the note
  SkillSelectorOptions() {
    sampling.temperature = 1.0;
    sampling.top_p = 1.0;
    sampling.max_tokens = 1024;
  }
};

class SkillSelector {
 public:
  SkillSelector(std::shared_ptr<const SkillLibrary> lib, const agent::ChatClient* llm, SkillSelectorOptions opts);

  int num_schemes() const { return opts_.selections + (opts_.null_scheme ? 1 : 0); }
  int SchemeOf(int sample) const { return sample < 0 ? 0 : sample % num_schemes(); }

  // The first-turn prompt of `sample` of a task (see the file comment); fills `note`.
  std::string Rewrite(const std::string& task_id, int sample, const std::string& prompt, nlohmann::json* note);
  agent::FirstTurnRewriter AsRewriter();

 private:
  struct Call {
    std::vector<std::string> names;
    std::vector<std::string> candidates;
    std::string response;
    std::string error;
  };
  struct TaskCalls {
    std::once_flag once;
    std::vector<Call> calls;
  };
  Call RunCall(const std::string& query, int scheme) const;

  std::shared_ptr<const SkillLibrary> lib_;
  const agent::ChatClient* llm_;
  SkillSelectorOptions opts_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<TaskCalls>> tasks_;
};

// The text a tool call is parsed from: the reply's content, then its reasoning text, then each structured
// message.tool_calls entry (servers running a tool parser) rendered as <tool_call>{"name", "arguments"}</tool_call>.
std::string ToolCallText(const agent::ChatChoice& choice);

// Converts OpenAI-style JSON messages ([{"role", "content"}]) to the chat client's form.
std::vector<agent::ChatMessage> ToChatMessages(const nlohmann::json& messages);

}  // namespace kgym::skills
