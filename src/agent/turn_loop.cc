#include "agent/turn_loop.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>

#include "agent/extract.h"

namespace kgym::agent {

namespace {
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string NowIso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::tm tm;
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Releases a semaphore slot and decrements a gauge on scope exit.
class Slot {
 public:
  Slot(std::counting_semaphore<>* sem, std::atomic<int>* gauge) : sem_(sem), gauge_(gauge) {
    if (sem_) sem_->acquire();
    if (gauge_) ++*gauge_;
  }
  ~Slot() {
    if (gauge_) --*gauge_;
    if (sem_) sem_->release();
  }

 private:
  std::counting_semaphore<>* sem_;
  std::atomic<int>* gauge_;
};

nlohmann::json PreflightFailure(const std::string& task_id, const std::string& why) {
  return {{"task_id", task_id},
          {"status", "failed"},
          {"compiled", false},
          {"correctness", false},
          {"decoy_kernel", false},
          {"reference_runtime", -1.0},
          {"kernel_runtime", -1.0},
          {"speedup", 0.0},
          {"metadata", nlohmann::json::object()},
          {"error_message", "Client validation failed: " + why},
          {"error_code", "VALIDATION_ERROR"},
          {"outcome", "compile_error"},
          {"outcome_detail", "preflight"}};
}

double MetricOf(const nlohmann::json& turn, const std::string& metric) {
  if (metric == "speedup") {
    const auto& r = turn["result"];
    bool correct = r.value("correctness", false) && !r.value("decoy_kernel", false);
    return correct ? r.value("speedup", 0.0) : 0.0;
  }
  return turn.value("reward", 0.0);
}
}  // namespace

int TotalTurns(const TurnLoopConfig& cfg) {
  if (cfg.iterations <= 1) return cfg.turns;
  return cfg.turns + (cfg.iterations - 1) * (cfg.turns - cfg.keep_turns);
}

std::vector<size_t> SelectContextTurns(const std::vector<double>& metrics, size_t keep, const std::string& method) {
  std::vector<size_t> out;
  if (keep == 0) return out;
  if (metrics.size() <= keep) {
    for (size_t i = 0; i < metrics.size(); ++i) out.push_back(i);
    return out;
  }
  size_t start = metrics.size() - keep;
  if (method == "best") {
    double best = 0;
    for (size_t i = 0; i < keep; ++i) best += metrics[i];
    start = 0;
    double sum = best;
    for (size_t s = 1; s + keep <= metrics.size(); ++s) {
      sum += metrics[s + keep - 1] - metrics[s - 1];
      if (sum > best + 1e-12) {
        best = sum;
        start = s;
      }
    }
  }
  for (size_t i = 0; i < keep; ++i) out.push_back(start + i);
  return out;
}

std::string FirstPrompt(const Task& task, const TurnLoopConfig& cfg, const TurnLoopDeps& deps, int sample,
                        nlohmann::json* note) {
  std::string prompt;
  if (cfg.use_dataset_prompt && task.prompt.is_array() && !task.prompt.empty()) {
    // Dr.Kernel's datasets store a single user message.
    for (const auto& m : task.prompt)
      if (m.value("role", "") == "user") {
        prompt = m.value("content", "");
        break;
      }
  }
  if (prompt.empty()) prompt = RenderFirstTurn(*deps.templates, task.reference_code);
  if (deps.first_turn_rewriter) {
    nlohmann::json scratch = nlohmann::json::object();
    prompt = deps.first_turn_rewriter(task.id, task.reference_code, sample, prompt, note ? note : &scratch);
  }
  return prompt;
}

bool Preflight(const std::string& reference_code, const std::string& code, const std::string& entry_point,
               std::string* why) {
  if (reference_code.find("class " + entry_point) == std::string::npos) {
    *why = "missing `class " + entry_point + "` in the reference code";
    return false;
  }
  if (code.find("class " + entry_point + "New") == std::string::npos) {
    *why = "missing `class " + entry_point + "New` in the extracted kernel code";
    return false;
  }
  return true;
}

std::string EvalTaskId(const std::string& run_id, const std::string& task_id, int sample, int turn,
                       const std::string& code) {
  auto clean = [](const std::string& s) {
    std::string o;
    for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
    return o;
  };
  char tail[64];
  std::snprintf(tail, sizeof(tail), "-s%d-t%d-%08zx", sample, turn, std::hash<std::string>{}(code)&0xffffffffu);
  std::string head = clean(run_id) + "-" + clean(task_id);
  size_t room = 100 - std::string(tail).size();
  if (head.size() > room) {
    char h[16];
    std::snprintf(h, sizeof(h), "%08zx", std::hash<std::string>{}(head)&0xffffffffu);
    head = head.substr(0, room - 9) + "~" + h;
  }
  return head + tail;
}

nlohmann::json RunTrajectory(const Task& task, int sample, const TurnLoopConfig& cfg, const TurnLoopDeps& deps) {
  const auto t_start = Clock::now();
  nlohmann::json rec;
  rec["key"] = task.id + "#" + std::to_string(sample);
  rec["task_id"] = task.id;
  rec["task_name"] = task.name;
  rec["level"] = task.level;
  rec["problem_id"] = task.problem_id;
  rec["sample"] = sample;
  rec["model"] = cfg.model;
  rec["started_at"] = NowIso();

  nlohmann::json first_note = nlohmann::json::object();
  const std::string first = FirstPrompt(task, cfg, deps, sample, &first_note);
  if (first_note.is_object() && !first_note.empty()) rec["first_turn"] = first_note;
  std::vector<ChatMessage> context = {{"user", first}};
  nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", first}}});
  nlohmann::json turns = nlohmann::json::array();
  std::vector<double> selection;  // per stored turn, for context management
  std::string status = "done";
  std::vector<int> context_turns;  // global turn numbers in the context besides the initial prompt

  for (int iter = 0; iter < std::max(1, cfg.iterations) && status == "done"; ++iter) {
    int new_turns = cfg.turns;
    if (iter > 0) {
      std::vector<size_t> keep = SelectContextTurns(selection, cfg.keep_turns, cfg.keep_method);
      context = {{"user", first}};
      context_turns.clear();
      for (size_t i : keep) {
        context.push_back({"assistant", turns[i]["response"].get<std::string>()});
        context.push_back({"user", turns[i]["feedback_message"].get<std::string>()});
        context_turns.push_back(static_cast<int>(i) + 1);
      }
      new_turns = cfg.turns - static_cast<int>(keep.size());
    }
    for (int k = 0; k < new_turns; ++k) {
      const int turn_no = static_cast<int>(turns.size()) + 1;
      nlohmann::json turn;
      turn["turn"] = turn_no;
      turn["iteration"] = iter;
      turn["context_turns"] = context_turns;
      turn["context_messages"] = context.size();

      // 1. Generate.
      if (deps.gate) deps.gate->Generate();
      SamplingParams sp = cfg.sampling;
      if (cfg.seed >= 0) sp.seed = cfg.seed + 1000 * sample + turn_no;
      ChatResponse resp;
      const auto t_llm = Clock::now();
      Status ls;
      {
        Slot slot(deps.llm_slots, deps.counters ? &deps.counters->llm_in_flight : nullptr);
        ls = deps.llm->Complete(context, sp, &resp);
      }
      turn["llm_s"] = Since(t_llm);
      turn["llm_attempts"] = resp.attempts;
      if (!resp.retry_errors.empty()) turn["llm_retry_errors"] = resp.retry_errors;
      if (!ls.ok()) {
        turn["abnormal"] = true;
        turn["error"] = ls.ToString();
        turns.push_back(turn);
        status = "llm_error";
        break;
      }
      const ChatChoice& choice = resp.choices.front();
      turn["response"] = choice.content;
      if (!choice.reasoning_content.empty()) turn["reasoning"] = choice.reasoning_content;
      turn["finish_reason"] = choice.finish_reason;
      turn["usage"] = resp.usage;
      if (!choice.logprobs.is_null()) turn["logprobs"] = choice.logprobs;
      if (!choice.token_ids.empty()) {
        turn["token_ids"] = choice.token_ids;
        turn["prompt_token_ids"] = resp.prompt_token_ids;
      }
      if (resp.policy_version >= 0) turn["policy_version"] = resp.policy_version;

      // 2. Extract and evaluate.
      ExtractedCode ex = ExtractKernelCode(choice.content);
      turn["code"] = ex.code;
      turn["extraction"] = ex.method;
      std::string why;
      nlohmann::json result;
      if (deps.gate) deps.gate->Evaluate();
      const auto t_eval = Clock::now();
      if (!Preflight(task.reference_code, ex.code, task.entry_point, &why)) {
        result = PreflightFailure(EvalTaskId(cfg.run_id, task.id, sample, turn_no, ex.code), why);
        turn["preflight_error"] = why;
      } else {
        EvalRequest req = cfg.eval;
        req.task_id = EvalTaskId(cfg.run_id, task.id, sample, turn_no, ex.code);
        req.reference_code = task.reference_code;
        req.kernel_code = ex.code;
        req.entry_point = task.entry_point;
        Status es;
        {
          Slot slot(deps.eval_slots, deps.counters ? &deps.counters->eval_in_flight : nullptr);
          es = deps.eval->Evaluate(req, &result);
          if (es.ok() && cfg.rerun_above_speedup > 0 && result.value("speedup", 0.0) > cfg.rerun_above_speedup) {
            // Dr.Kernel re-runs suspiciously fast results once and keeps the second verdict.
            nlohmann::json again;
            req.task_id += "-rerun";
            if (deps.eval->Evaluate(req, &again).ok()) {
              turn["result_first"] = result;
              result = again;
            }
          }
        }
        if (!es.ok()) {
          turn["eval_s"] = Since(t_eval);
          turn["abnormal"] = true;
          turn["error"] = es.ToString();
          turns.push_back(turn);
          status = "eval_error";
          break;
        }
      }
      turn["eval_s"] = Since(t_eval);
      turn["result"] = result;

      // 3. Reward and feedback.
      nlohmann::json summary = deps.reward ? deps.reward(result) : nlohmann::json{{"reward", 0.0}};
      turn["reward"] = summary.value("reward", 0.0);
      turn["reward_summary"] = summary;
      const std::string feedback = RenderFeedback(result, summary, cfg.feedback);
      const std::string next = RenderRefinement(*deps.templates, feedback);
      turn["feedback_message"] = next;
      turn["abnormal"] = false;

      context.push_back({"assistant", choice.content});
      context.push_back({"user", next});
      context_turns.push_back(turn_no);
      messages.push_back({{"role", "assistant"}, {"content", choice.content}});
      messages.push_back({{"role", "user"}, {"content", next}});
      selection.push_back(MetricOf(turn, cfg.selection_metric));
      turns.push_back(turn);
      if (deps.counters) ++deps.counters->turns_done;
    }
  }
  if (deps.gate) deps.gate->Leave();
  rec["status"] = status;
  rec["turns"] = turns;
  rec["messages"] = messages;
  rec["num_turns"] = turns.size();
  rec["finished_at"] = NowIso();
  rec["wall_s"] = Since(t_start);
  return rec;
}

}  // namespace kgym::agent
