// RunSpec: every parameter of a run of the kernel agent's turn loop, in one struct, whichever command starts it
// (`kgym agent`, `kgym skills evolve`, `kgym sft`'s grading, `kgym train`'s rollouts). Its groups:
//   llm      the OpenAI-compatible endpoint and how it is called
//   sampling how each turn is sampled
//   gym      where and how a candidate is evaluated (the request template and the evaluator)
//   reward   which reward a verdict earns
//   skills   daVinci's skill library: which snapshot, how selections are made
//   loop     turns, samples, context between iterations, concurrency, prompts
// Each parameter has one flag name and, where `kgym sft` / `kgym train` configure it, one YAML key: both are
// defined once, in run_params.h; run_builder.h turns a RunSpec into the turn loop's parts. The defaults here are
// `kgym agent`'s (Dr.Kernel's eval scripts'); a command or the training defaults (configs/*.yaml) start from others.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/evaluation.h"

namespace kgym::run {

struct LlmSpec {
  std::string base_url;  // e.g. http://127.0.0.1:8000/v1
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";  // the variable holding the key (the key itself is never recorded)
  double timeout_s = 600;                      // per request
  int max_retries = 4;                         // retries on 429/5xx/timeouts, of the LLM's and the gym's requests
  double retry_backoff_s = 1.0;                // first delay, doubling per retry
};

struct SamplingSpec {
  double temperature = 1.0;
  double top_p = 0.95;
  int top_k = -1;         // <= 0: not sent
  int max_tokens = 8192;  // per turn; 0 = not sent
  int seed = -1;          // per request seed + 1000 * sample + turn; < 0 = not sent
  std::vector<std::string> stop;
  bool logprobs = false;   // ask for and record token log-probs
  bool token_ids = false;  // ask for and record the prompt's and the reply's token ids
};

struct GymSpec {
  std::string server;   // KernelGYM-compatible URL; "" = kgym's in-process evaluator
  EvalRequest request;  // the template of every evaluation: device, backend, trials, timeout, size, ...
  bool compat = false;  // in-process evaluator: KernelGYM's status semantics in the results
  int eval_concurrency = 4;
  double retry_window_s = 0;  // gym.server: a request failing in passing is sent again for this long (0: max_retries)
  GymSpec() {                 // Dr.Kernel's eval scripts' 10 timed calls, and room for a slow candidate
    request.num_perf_trials = 10;
    request.timeout_s = 600;
  }
};

struct RewardSpec {
  std::string function = "calculate_reward_speedup";
  bool coverage = false;             // the profiling-coverage term (the RL recipe's; off in the eval scripts)
  double rerun_above_speedup = 3.0;  // a speedup above this is evaluated once more (0 = never)
};

struct SkillsSpec {
  std::string library;  // a skill library folder; "" = no skills
  int64_t step = -1;    // the newest snapshot at or below this step (-1 = newest)
  int selections = 3;   // k: selection calls per task (sample i runs scheme i % (k+1), scheme k without skills)
  double temperature = 1.0;
  int max_tokens = 1024;
  bool greedy = false;   // one greedy selection per task, every sample injected, no null scheme
  bool no_null = false;  // no null scheme
  int summaries = 8;     // summaries sampled per triggered task when the library evolves
};

struct LoopSpec {
  int turns = 3;
  int samples = 8;  // trajectories per task
  int iterations = 1;
  int keep_turns = 4;
  std::string keep_method = "best";
  std::string layout = "concurrent";  // concurrent | lockstep (every trajectory generates, then all evaluate)
  int concurrency = 16;               // trajectories in flight (layout concurrent)
  int llm_concurrency = 8;
  bool no_dataset_prompt = false;  // render the template even for a task that stores its prompt
  std::string templates;           // prompt template folder; "" = the built-in ones
  size_t feedback_max_chars = 8000;
  std::string run_id;  // prefix of the evaluation task ids
};

struct RunSpec {
  LlmSpec llm;
  SamplingSpec sampling;
  GymSpec gym;
  RewardSpec reward;
  SkillsSpec skills;
  LoopSpec loop;

  // Every parameter by its flag name (run_params.h), for the run's record and for comparing specs.
  nlohmann::json ToJson() const;
};

}  // namespace kgym::run
