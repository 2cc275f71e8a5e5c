#include "skills/skill_selector.h"

namespace kgym::skills {

std::vector<agent::ChatMessage> ToChatMessages(const nlohmann::json& messages) {
  std::vector<agent::ChatMessage> out;
  if (!messages.is_array()) return out;
  for (const auto& m : messages) out.push_back({m.value("role", "user"), m.value("content", "")});
  return out;
}

std::string ToolCallText(const agent::ChatChoice& choice) {
  std::string text = choice.content;
  if (!choice.reasoning_content.empty()) text += "\n" + choice.reasoning_content;
  if (choice.tool_calls.is_array())
    for (const auto& tc : choice.tool_calls) {
      if (!tc.is_object() || !tc.contains("function") || !tc["function"].is_object()) continue;
      const auto& f = tc["function"];
      nlohmann::json call = {{"name", f.value("name", "")},
                             {"arguments", f.contains("arguments") ? f["arguments"] : nlohmann::json::object()}};
      text += "\n<tool_call>" + call.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "</tool_call>";
    }
  return text;
}

SkillSelector::SkillSelector(std::shared_ptr<const SkillLibrary> lib, const agent::ChatClient* llm,
                             SkillSelectorOptions opts)
    : lib_(std::move(lib)), llm_(llm), opts_(std::move(opts)) {
  if (opts_.selections < 0) opts_.selections = 0;
  if (num_schemes() == 0) opts_.null_scheme = true;
  lib_->Prepare();  // build the index before threads share the library
}

SkillSelector::Call SkillSelector::RunCall(const std::string& query, int scheme) const {
  Call c;
  const auto candidates = SelectionCandidates(*lib_, query, static_cast<uint32_t>(scheme), opts_.selection);
  for (const SkillRecord* s : candidates) c.candidates.push_back(s->name);
  const nlohmann::json messages = BuildSelectionMessages(query, candidates, opts_.selection);
  agent::SamplingParams sp = opts_.sampling;
  if (opts_.send_tool_schema) sp.extra["tools"] = nlohmann::json::array({SelectSkillsTool(opts_.selection)});
  if (sp.seed >= 0) sp.seed += scheme;
  agent::ChatResponse resp;
  Status st = llm_->Complete(ToChatMessages(messages), sp, &resp);
  if (!st.ok()) {
    c.error = st.ToString();
    return c;
  }
  const agent::ChatChoice& choice = resp.choices.front();
  c.response = choice.content;
  c.names = ParseSelection(choice.content, *lib_);
  // Reasoning parsers may move the call out of `content`; tool parsers return it as message.tool_calls.
  if (c.names.empty()) {
    c.response = ToolCallText(choice);
    c.names = ParseSelection(c.response, *lib_);
  }
  return c;
}

std::string SkillSelector::Rewrite(const std::string& task_id, int sample, const std::string& prompt,
                                   nlohmann::json* note) {
  const int scheme = SchemeOf(sample);
  nlohmann::json& n = *note;
  n["scheme"] = scheme;
  n["schemes"] = num_schemes();
  n["library_size"] = lib_->size();
  n["library_step"] = opts_.library_step;
  n["plain_prompt"] = prompt;
  n["skills"] = nlohmann::json::array();
  n["injected"] = nullptr;
  if (scheme >= opts_.selections) {
    n["null_scheme"] = true;
    return prompt;
  }
  n["null_scheme"] = false;
  if (lib_->empty()) return prompt;  // daVinci skips every call on an empty library

  std::shared_ptr<TaskCalls> tc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = tasks_[task_id];
    if (!slot) slot = std::make_shared<TaskCalls>();
    tc = slot;
  }
  std::call_once(tc->once, [&] {
    const nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
    const std::string query = TaskQuery(messages, opts_.selection.max_query_chars);
    for (int j = 0; j < opts_.selections; ++j) tc->calls.push_back(RunCall(query, j));
  });
  const Call& c = tc->calls.at(static_cast<size_t>(scheme));
  n["selection"] = {{"candidates", c.candidates}, {"response", c.response}};
  if (!c.error.empty()) n["selection"]["error"] = c.error;
  n["skills"] = c.names;
  const std::string injected = RenderInjection(*lib_, c.names);
  if (injected.empty()) return prompt;
  n["injected"] = injected;
  const nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
  return InjectSkills(messages, injected)[0]["content"].get<std::string>();
}

agent::FirstTurnRewriter SkillSelector::AsRewriter() {
  return [this](const std::string& task_id, const std::string&, int sample, const std::string& prompt,
                nlohmann::json* note) { return Rewrite(task_id, sample, prompt, note); };
}

}  // namespace kgym::skills
