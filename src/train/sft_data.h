// SFT conversations from kgym's own tasks and their hand-written solutions, in the drkernel-coldstart-8k schema
// (what `kgym sft` reads): for every task and every solution kind asked for that exists
// (<solutions>/<task_id>_<kind>.py, e.g. tasks/solutions/level1/rmsnorm_triton.py), one conversation
//   user:      the task's first-turn prompt as the agent sends it: its stored prompt, else Dr.Kernel's template
//              (agent/prompt.h, byte-exact)
//   assistant: "```python\n<the solution>```"
// A task with two kinds gets two conversations with the same prompt: a policy trained on both puts about equal
// probability on each (how the RL experiment starts from a policy that knows a fast and a slow answer).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::train {

struct SftDataOptions {
  std::string tasks;      // tasks folder (or any agent/task.h input)
  std::string solutions;  // folder of <task_id>_<kind>.py
  std::vector<std::string> kinds = {"triton"};
  std::vector<std::string> only;  // task ids or substrings; empty = all
  std::string templates;          // prompt template folder; empty = built-in
  int repeat = 1;                 // each conversation written this many times
};

// Writes the JSONL file; `count` gets the number of conversations, `tasks` the tasks that got at least one.
Status WriteSftData(const SftDataOptions& opt, const std::string& out_path, int* count, int* tasks);

}  // namespace kgym::train
