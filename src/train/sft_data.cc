#include "train/sft_data.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/prompt.h"
#include "agent/task.h"

namespace kgym::train {

namespace {
// The task's stored first user message when it has one (as the agent sends it), else the rendered template.
std::string FirstUserMessage(const agent::Task& t, const agent::PromptTemplates& tmpl) {
  if (t.prompt.is_array())
    for (const auto& m : t.prompt)
      if (m.value("role", "") == "user") return m.value("content", "");
  return agent::RenderFirstTurn(tmpl, t.reference_code);
}
}  // namespace

Status WriteSftData(const SftDataOptions& opt, const std::string& out_path, int* count, int* tasks) {
  namespace fs = std::filesystem;
  std::vector<agent::Task> all;
  Status s = agent::LoadTasks(opt.tasks, &all);
  if (!s.ok()) return s;
  agent::PromptTemplates tmpl;
  s = agent::PromptTemplates::Load(opt.templates, &tmpl);
  if (!s.ok()) return s;
  if (!fs::is_directory(opt.solutions))
    return Status::NotFound("solutions folder " + opt.solutions + " does not exist");
  std::ofstream out(out_path);
  if (!out) return Status::IOError("cannot write " + out_path);
  int n = 0, with = 0;
  for (const auto& t : all) {
    bool keep = opt.only.empty();
    for (const auto& o : opt.only) keep |= t.id == o || t.id.find(o) != std::string::npos;
    if (!keep) continue;
    bool any = false;
    for (const auto& kind : opt.kinds) {
      const fs::path file = fs::path(opt.solutions) / (t.id + "_" + kind + ".py");
      if (!fs::exists(file)) continue;
      std::ifstream in(file);
      std::stringstream buf;
      buf << in.rdbuf();
      nlohmann::json rec = {{"messages",
                             {{{"role", "user"}, {"content", FirstUserMessage(t, tmpl)}},
                              {{"role", "assistant"}, {"content", "```python\n" + buf.str() + "```"}}}},
                            {"uuid", t.id + "#" + kind},
                            {"entry_point", t.entry_point},
                            {"original_python_code", t.reference_code},
                            {"num_rounds", 1},
                            {"best_round", 1},
                            {"conversion_mode", "kgym_solutions"},
                            {"solution_kind", kind},
                            {"enable_thinking", false}};
      for (int r = 0; r < std::max(1, opt.repeat); ++r) out << rec.dump() << "\n", ++n;
      any = true;
    }
    with += any ? 1 : 0;
  }
  if (n == 0) return Status::InvalidArgument("no solution of the asked kinds found under " + opt.solutions);
  *count = n;
  *tasks = with;
  return out ? Status::Ok() : Status::IOError("write to " + out_path + " failed");
}

}  // namespace kgym::train
