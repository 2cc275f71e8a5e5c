#include "eval/simulated_evaluator.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace kgym {

namespace {
// Value of "# sim: key=value" in code, or "".
std::string Directive(const std::string& code, const std::string& key) {
  std::string needle = "# sim: " + key + "=";
  auto p = code.find(needle);
  if (p == std::string::npos) return "";
  p += needle.size();
  auto e = code.find_first_of(" \t\r\n", p);
  return code.substr(p, e == std::string::npos ? std::string::npos : e - p);
}
}  // namespace

SimulatedEvaluator::SimulatedEvaluator(SimulatedEvaluatorOptions options) : options_(std::move(options)) {
  if (!options_.journal_path.empty())
    journal_fd_ = open(options_.journal_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

SimulatedEvaluator::~SimulatedEvaluator() {
  if (journal_fd_ >= 0) close(journal_fd_);
}

void SimulatedEvaluator::Journal(const char* what, const std::string& task_id) {
  if (journal_fd_ < 0) return;
  std::string line = std::string(what) + " " + task_id + "\n";
  ssize_t n = write(journal_fd_, line.data(), line.size());  // O_APPEND: one atomic line
  (void)n;
}

int SimulatedEvaluator::Attempts(const std::string& task_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = attempts_.find(task_id);
  return it == attempts_.end() ? 0 : it->second;
}

int SimulatedEvaluator::MaxConcurrent() const {
  std::lock_guard<std::mutex> l(mu_);
  return max_running_;
}

EvalResult SimulatedEvaluator::Evaluate(const EvalRequest& req, const ProgressFn& progress,
                                        const std::atomic<bool>* cancel) {
  int attempt;
  {
    std::lock_guard<std::mutex> l(mu_);
    attempt = ++attempts_[req.task_id];
    max_running_ = std::max(max_running_, ++running_);
  }
  Journal("start", req.task_id);
  auto report = [&](const char* phase) {
    if (progress) progress(phase);
  };
  EvalResult r;
  r.task_id = req.task_id;
  r.metadata = {{"simulated", true},
                {"device", req.device == "cpu" ? "cpu" : "cuda:" + std::to_string(req.device_index)},
                {"attempt", attempt}};
  std::string sleep_s = Directive(req.kernel_code, "sleep");
  double sleep = sleep_s.empty() ? options_.default_sleep_s : std::atof(sleep_s.c_str());
  std::string outcome = Directive(req.kernel_code, "outcome");
  int system_errors = std::atoi(Directive(req.kernel_code, "system_error").c_str());

  report("load");
  auto start = std::chrono::steady_clock::now();
  bool cancelled = false, timed_out = false;
  for (;;) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (cancel && cancel->load()) {
      cancelled = true;
      break;
    }
    if (elapsed >= sleep) break;
    if (elapsed >= req.timeout_s) {
      timed_out = true;
      break;
    }
    if (elapsed >= sleep / 2) report("correctness");
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.005, sleep - elapsed)));
  }
  if (cancelled) {
    r.outcome = Outcome::kInvalid;
    r.outcome_detail = "cancelled";
    r.error_message = "cancelled";
  } else if (timed_out) {
    r.outcome = Outcome::kTimeout;
    r.error_code = ErrorCodeFor(r.outcome);
    r.error_message = "evaluation exceeded its timeout";
  } else if (attempt <= system_errors) {
    r.outcome = Outcome::kInvalid;
    r.error_code = "SYSTEM_ERROR";
    r.error_message = "simulated infrastructure failure (attempt " + std::to_string(attempt) + ")";
  } else {
    r.outcome = OutcomeFromName(outcome.empty() ? "correct" : outcome).value_or(Outcome::kCorrect);
    r.compiled = r.outcome != Outcome::kCompileError;
    r.correctness = r.outcome == Outcome::kCorrect;
    r.error_code = ErrorCodeFor(r.outcome);
    if (r.outcome != Outcome::kCorrect) r.error_message = std::string("simulated ") + OutcomeName(r.outcome);
    if (r.correctness) {
      report("timing");
      r.reference_runtime = 1.0;
      r.kernel_runtime = 0.5;
      r.speedup = 2.0;
      r.metadata["num_custom_kernels"] = 1;
      r.metadata["num_total_kernels"] = 1;
      r.metadata["custom_kernel_cuda_time_in_profiling_us"] = 500.0;
      r.metadata["total_kernel_run_time_in_profiling_us"] = 500.0;
    }
  }
  r.outcome_detail = r.outcome_detail.empty() ? "simulated" : r.outcome_detail;
  report("done");
  Journal("end", req.task_id);
  std::lock_guard<std::mutex> l(mu_);
  --running_;
  return r;
}

}  // namespace kgym
