// SimulatedEvaluator: an Evaluator that evaluates nothing. It sleeps, reports phases and returns the outcome
// that directives in the candidate's code ask for, so the scheduler, server, store and load benchmarks can be
// driven at rates and failure mixes a real evaluator cannot produce on a CPU machine. Selected with
// `kgym serve --evaluator simulated`; never the default.
//
// Directives (anywhere in kernel_code, one per line):
//   # sim: sleep=SECONDS          evaluation takes this long (default: options.default_sleep_s)
//   # sim: outcome=NAME           an Outcome name (correct, incorrect, compile_error, ...); default correct
//   # sim: system_error=N         the first N attempts of this task_id fail with SYSTEM_ERROR
// The sleep honours the cancel flag and the request timeout (exceeding it gives outcome "timeout").
//
// Thread-safe. If options.journal_path is set, one line "start|end <task_id>" is appended per evaluation.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "eval/evaluator.h"

namespace kgym {

struct SimulatedEvaluatorOptions {
  double default_sleep_s = 0.0;
  std::vector<std::string> devices = {"cpu"};
  std::string journal_path;
};

class SimulatedEvaluator : public Evaluator {
 public:
  explicit SimulatedEvaluator(SimulatedEvaluatorOptions options);
  ~SimulatedEvaluator() override;

  EvalResult Evaluate(const EvalRequest& req, const ProgressFn& progress = {},
                      const std::atomic<bool>* cancel = nullptr) override;
  std::vector<std::string> Devices() const override { return options_.devices; }

  // Number of Evaluate() calls seen for a task id (retries included).
  int Attempts(const std::string& task_id) const;
  int MaxConcurrent() const;

 private:
  void Journal(const char* what, const std::string& task_id);

  SimulatedEvaluatorOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, int> attempts_;
  int running_ = 0, max_running_ = 0;
  int journal_fd_ = -1;
};

}  // namespace kgym
