// `kgym suite`: evaluates every hand-written solution of the built-in task suite (tasks/levelN/<name>.py against
// tasks/solutions/levelN/<name>_<kind>.py) through the Scheduler, --jobs at a time on one device, and prints a table.
// Solutions named *_wrong must not come out correct; every other solution must. Raw results go to --out as JSON.
// --mem-budget bounds the evaluations in flight by host memory as well (sched/admission.h).
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "agent/task.h"
#include "cli/command_registry.h"
#include "cli/evaluator_flags.h"
#include "cli/shared_flags.h"
#include "eval/evaluator.h"
#include "run/run_params.h"
#include "sched/admission.h"
#include "sched/admitted_evaluator.h"
#include "sched/host_memory.h"
#include "sched/scheduler.h"

namespace {
namespace fs = std::filesystem;

struct SuiteItem {
  std::string level, task, kind, ref_code, sol_path;
  kgym::EvalResult result;
  double wall_s = 0;
  std::chrono::steady_clock::time_point started;
};

struct SuiteFlags {
  std::string tasks = "tasks", device, out, kinds = "triton,torch,wrong", only;
  int jobs = 4, device_index = 0;
  kgym::EvalRequest request;  // the template of every job: size, trials, timeout (request/request_fields.h)
  SuiteFlags() { request.timeout_s = 600; }
  double mem_budget_gb = -1;  // < 0: 70 % of available host (or cgroup) memory; 0: off
};

// Seconds the evaluation waited for memory admission before it ran (0 when it did not wait or admission is off).
double AdmissionWait(const kgym::EvalResult& r) {
  auto it = r.metadata.find("memory_admission");
  return it != r.metadata.end() && it->is_object() ? it->value("waited_s", 0.0) : 0.0;
}

std::string Slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

// The solutions to evaluate, sorted: for every reference task under levelN/ (agent::LoadTasks reads the tree), each
// kind's solution that exists. --only: a token that is some task's whole name selects that task alone ("relu" is not
// "leaky_relu"); any other token selects every task whose name contains it.
kgym::Status FindSolutions(const SuiteFlags& f, std::vector<SuiteItem>* items) {
  std::vector<kgym::agent::Task> tasks;
  kgym::Status s = kgym::agent::LoadTasks(f.tasks, &tasks);
  if (!s.ok()) return s;
  std::set<std::string> names;
  for (const auto& t : tasks) names.insert(t.name);
  const std::vector<std::string> only = SplitComma(f.only), kinds = SplitComma(f.kinds);
  for (const auto& t : tasks) {
    const std::string level = fs::path(t.id).parent_path().string();
    if (level.rfind("level", 0) != 0 || level.find('/') != std::string::npos) continue;
    bool keep = only.empty();
    for (const auto& o : only) keep |= names.count(o) ? t.name == o : t.name.find(o) != std::string::npos;
    if (!keep) continue;
    for (const auto& k : kinds) {
      fs::path sol = fs::path(f.tasks) / "solutions" / level / (t.name + "_" + k + ".py");
      if (fs::exists(sol)) items->push_back({level, t.name, k, t.reference_code, sol.string(), {}, 0, {}});
    }
  }
  std::sort(items->begin(), items->end(), [](const auto& a, const auto& b) {
    return std::tie(a.level, a.task, a.kind) < std::tie(b.level, b.task, b.kind);
  });
  return kgym::Status::Ok();
}

// Collects the scheduler's results into the items and prints one line per result as it lands, so a run cut short
// still leaves its raw numbers (written in one piece: memory admission writes its own lines from other threads).
class SuiteListener : public kgym::SchedulerListener {
 public:
  explicit SuiteListener(std::vector<SuiteItem>* items) : items_(items) {
    for (size_t i = 0; i < items->size(); ++i) index_[Id((*items)[i])] = i;
  }
  static std::string Id(const SuiteItem& it) { return it.level + "/" + it.task + "_" + it.kind; }

  void OnStarted(const kgym::SchedJob& job, const std::string&, int) override {
    std::lock_guard<std::mutex> l(mu_);
    (*items_)[index_.at(job.id)].started = std::chrono::steady_clock::now();
  }
  void OnProgress(const kgym::SchedJob&, const std::string&) override {}
  void OnRetry(const kgym::SchedJob&, const kgym::EvalResult&, double) override {}
  void OnFinished(const kgym::SchedJob& job, const kgym::EvalResult& result) override {
    std::lock_guard<std::mutex> l(mu_);
    SuiteItem& it = (*items_)[index_.at(job.id)];
    it.result = result;
    it.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - it.started).count();
    std::ostringstream line;
    line << job.id << ": " << kgym::OutcomeName(result.outcome) << " ref_ms " << result.reference_runtime
         << " kernel_ms " << result.kernel_runtime << " speedup " << result.speedup << " (" << it.wall_s << " s";
    if (double waited = AdmissionWait(result); waited > 0) line << ", " << waited << " s of it waiting for memory";
    line << ") " << result.outcome_detail.substr(0, 160) << "\n";
    std::fputs(line.str().c_str(), stderr);
    ++finished_;
    cv_.notify_all();
  }
  void WaitForAll() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return finished_ == items_->size(); });
  }

 private:
  std::vector<SuiteItem>* items_;
  std::map<std::string, size_t> index_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t finished_ = 0;
};

// Every item through a Scheduler with one device of --jobs slots (no retries: a system error is a result here).
kgym::Status RunItems(const SuiteFlags& f, const std::string& device, kgym::Evaluator* ev,
                      std::vector<SuiteItem>* items) {
  SuiteListener listener(items);
  kgym::SchedulerOptions so;
  so.devices = {{device == "cuda" ? "cuda:" + std::to_string(f.device_index) : "cpu", std::max(1, f.jobs)}};
  so.max_retries = 0;
  kgym::Scheduler sched(ev, so, &listener);
  sched.Start();
  for (const auto& it : *items) {
    kgym::SchedJob job;
    job.id = SuiteListener::Id(it);
    job.request.task_id = job.id;
    job.request.reference_code = it.ref_code;
    job.request.kernel_code = Slurp(it.sol_path);
    job.request.size = f.request.size;
    job.request.num_perf_trials = f.request.num_perf_trials;
    job.request.num_correct_trials = f.request.num_correct_trials;
    job.request.timeout_s = f.request.timeout_s;
    kgym::Status s = sched.Submit(std::move(job));
    if (!s.ok()) return s;
  }
  listener.WaitForAll();
  return kgym::Status::Ok();
}

int PrintReport(const SuiteFlags& f, const std::string& device, const std::vector<SuiteItem>& items,
                kgym::Evaluator* ev) {
  int expected = 0;
  nlohmann::json raw = nlohmann::json::array();
  std::printf(
      "| task | solution | outcome | ref ms | kernel ms | speedup | as expected |\n|---|---|---|---|---|---|---|\n");
  for (const auto& it : items) {
    const bool want_correct = it.kind != "wrong";
    const bool ok = (it.result.outcome == kgym::Outcome::kCorrect) == want_correct;
    expected += ok;
    std::printf("| %s/%s | %s | %s | %.3f | %.3f | %.2f | %s |\n", it.level.c_str(), it.task.c_str(), it.kind.c_str(),
                kgym::OutcomeName(it.result.outcome), it.result.reference_runtime, it.result.kernel_runtime,
                it.result.speedup, ok ? "yes" : "NO");
    nlohmann::json j = it.result.ToJson();
    j["suite"] = {{"level", it.level}, {"task", it.task},     {"kind", it.kind},
                  {"as_expected", ok}, {"wall_s", it.wall_s}, {"memory_wait_s", AdmissionWait(it.result)}};
    raw.push_back(j);
  }
  std::printf("\n%d of %zu solutions as expected (device %s)\n", expected, items.size(), device.c_str());
  kgym::AdmissionStats as;
  if (ev->Admission(&as)) {
    std::printf(
        "memory admission: budget %s, %lld of %lld evaluations waited for memory (%.1f s in all), %lld ran "
        "alone as larger than the budget\n",
        kgym::FormatGB(as.budget_bytes).c_str(), static_cast<long long>(as.waited_total),
        static_cast<long long>(as.admitted_total), as.wait_seconds_total, static_cast<long long>(as.oversized_total));
  } else {
    std::printf("memory admission: off\n");
  }
  if (!f.out.empty()) std::ofstream(f.out) << raw.dump(1) << "\n";
  return 0;
}

KGYM_REGISTER_COMMAND("suite", "evaluate every solution of the built-in task suite and print a table",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto f = std::make_shared<SuiteFlags>();
                        using kgym::cli::AddSharedOption;
                        AddSharedOption(sub, "--tasks", &f->tasks, "suite directory: levelN/ and solutions/levelN/");
                        AddSharedOption(sub, "--device", &f->device, "default: cuda when a GPU is visible")
                            ->check(CLI::IsMember({"cpu", "cuda"}));
                        AddSharedOption(sub, "--gpus", &f->device_index, "one GPU index, with --device cuda");
                        kgym::request::AddRequestFlag(sub, "--size", &f->request);
                        AddSharedOption(sub, "--kinds", &f->kinds, "comma-separated");
                        AddSharedOption(sub, "--only", &f->only,
                                        "the task whose name is exactly this, else those whose name contains it; "
                                        "comma-separated");
                        sub->add_option(
                            "--jobs", f->jobs,
                            "at most this many evaluations in flight (timing is still exclusive; --mem-budget "
                            "may allow fewer)");
                        for (const char* flag : {"--num-perf-trials", "--num-correct-trials", "--eval-timeout"})
                          kgym::request::AddRequestFlag(sub, flag, &f->request);
                        AddSharedOption(sub, "--out", &f->out, "the raw results, JSON");
                        // Old names (issue 35: one name per concept across commands).
                        kgym::run::AddOldFlag(sub, "--gpu", "--gpus", &f->device_index);
                        kgym::run::AddOldRequestFlag(sub, "--perf-trials", "--num-perf-trials", &f->request);
                        kgym::run::AddOldRequestFlag(sub, "--correct-trials", "--num-correct-trials", &f->request);
                        kgym::run::AddOldRequestFlag(sub, "--timeout", "--eval-timeout", &f->request);
                        kgym::cli::AddMemBudgetFlag(sub, &f->mem_budget_gb);
                        return [f]() -> int {
                          const std::string device =
                              f->device.empty() ? (::access("/dev/nvidia0", F_OK) == 0 ? "cuda" : "cpu") : f->device;
                          std::vector<SuiteItem> items;
                          kgym::Status s = FindSolutions(*f, &items);
                          if (s.ok() && items.empty())
                            s = kgym::Status::NotFound("no solutions found under " + f->tasks);
                          if (!s.ok()) {
                            std::cerr << "kgym suite: " << s.ToString() << "\n";
                            return 2;
                          }
                          std::unique_ptr<kgym::Evaluator> ev;
                          s = kgym::CreateEvaluatorWithBudget({}, kgym::MemoryBudgetFromFlag(f->mem_budget_gb),
                                                              "kgym suite", &ev);
                          if (s.ok()) s = RunItems(*f, device, ev.get(), &items);
                          if (!s.ok()) {
                            std::cerr << "kgym suite: " << s.ToString() << "\n";
                            return 1;
                          }
                          return PrintReport(*f, device, items, ev.get());
                        };
                      });
}  // namespace
