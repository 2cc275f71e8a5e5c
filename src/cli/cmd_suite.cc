// `kgym suite`: evaluates every hand-written solution of the built-in task suite (tasks/levelN/<name>.py against
// tasks/solutions/levelN/<name>_<kind>.py) with one evaluator, several at once, and prints a table. Solutions
// named *_wrong must not come out correct; every other solution must. Raw results go to --out as JSON.
// --jobs bounds the evaluations in flight; --mem-budget bounds them by host memory as well (eval/admission.h).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "cli/command_registry.h"
#include "eval/evaluator.h"
#include "sched/admission.h"
#include "sched/admitted_evaluator.h"
#include "sched/host_memory.h"

namespace {
namespace fs = std::filesystem;

struct SuiteItem {
  std::string level, task, kind, ref_path, sol_path;
  kgym::EvalResult result;
  double wall_s = 0;
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

struct SuiteFlags {
  std::string tasks = "tasks", device, size, out, kinds = "triton,torch,wrong", only;
  int jobs = 4, perf_trials = 100, correct_trials = 5, device_index = 0;
  double timeout = 600;
  double mem_budget_gb = -1;  // < 0: 70 % of available host (or cgroup) memory; 0: off
};

KGYM_REGISTER_COMMAND("suite", "evaluate every solution of the built-in task suite and print a table",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
  auto f = std::make_shared<SuiteFlags>();
  sub->add_option("--tasks", f->tasks, "suite directory (levelN/ and solutions/levelN/)");
  sub->add_option("--device", f->device, "cpu or cuda (default: cuda when a GPU is visible)");
  sub->add_option("--gpu", f->device_index, "GPU index");
  sub->add_option("--size", f->size, "task size (KGYM_TASK_SIZE), e.g. small");
  sub->add_option("--kinds", f->kinds, "comma-separated solution kinds");
  sub->add_option("--only", f->only, "evaluate only tasks whose name contains this, or is exactly it when some task has that name (comma-separated list)");
  sub->add_option("--jobs", f->jobs, "at most this many evaluations in flight (timing is still exclusive; --mem-budget "
                  "may allow fewer)");
  sub->add_option("--perf-trials", f->perf_trials, "timed calls");
  sub->add_option("--correct-trials", f->correct_trials, "correctness trials");
  sub->add_option("--timeout", f->timeout, "per-evaluation limit in seconds");
  sub->add_option("--out", f->out, "write raw results here (JSON)");
  sub->add_option("--mem-budget", f->mem_budget_gb,
                  "host memory (GB) the evaluations in flight may hold; default 70% of what is available, 0 = no limit");
  return [f]() -> int {
    std::string device = f->device.empty() ? (::access("/dev/nvidia0", F_OK) == 0 ? "cuda" : "cpu") : f->device;
    std::vector<std::string> kinds;
    std::stringstream ks(f->kinds);
    for (std::string k; std::getline(ks, k, ',');) kinds.push_back(k);
    std::vector<SuiteItem> items;
    std::error_code ec;
    // --only: a token that is some task's whole name selects that task alone ("relu" is not "leaky_relu");
    // any other token selects every task whose name contains it.
    std::set<std::string> names;
    for (const auto& lvl : fs::directory_iterator(f->tasks, ec))
      if (lvl.is_directory())
        for (const auto& t : fs::directory_iterator(lvl.path()))
          if (t.path().extension() == ".py") names.insert(t.path().stem());
    for (const auto& lvl : fs::directory_iterator(f->tasks, ec)) {
      std::string level = lvl.path().filename();
      if (!lvl.is_directory() || level.rfind("level", 0) != 0) continue;
      for (const auto& t : fs::directory_iterator(lvl.path())) {
        if (t.path().extension() != ".py") continue;
        std::string name = t.path().stem();
        if (!f->only.empty()) {  // comma-separated substrings; a task matching any of them is kept
          bool keep = false;
          std::stringstream os(f->only);
          for (std::string o; std::getline(os, o, ',');)
            keep |= !o.empty() && (names.count(o) ? name == o : name.find(o) != std::string::npos);
          if (!keep) continue;
        }
        for (const auto& k : kinds) {
          fs::path sol = fs::path(f->tasks) / "solutions" / level / (name + "_" + k + ".py");
          if (fs::exists(sol)) items.push_back({level, name, k, t.path(), sol, {}, 0});
        }
      }
    }
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return std::tie(a.level, a.task, a.kind) < std::tie(b.level, b.task, b.kind);
    });
    if (items.empty()) {
      std::cerr << "kgym suite: no solutions found under " << f->tasks << "\n";
      return 2;
    }
    std::unique_ptr<kgym::Evaluator> ev;
    uint64_t budget = kgym::MemoryBudgetFromFlag(f->mem_budget_gb);
    kgym::Status s = kgym::CreateEvaluatorWithBudget({}, budget, "kgym suite", &ev);
    if (!s.ok()) {
      std::cerr << "kgym suite: " << s.ToString() << "\n";
      return 1;
    }
    std::mutex mu;
    size_t next = 0;
    auto work = [&] {
      while (true) {
        size_t i;
        {
          std::lock_guard<std::mutex> l(mu);
          if (next >= items.size()) return;
          i = next++;
        }
        auto& it = items[i];
        kgym::EvalRequest req;
        req.task_id = it.level + "/" + it.task + "_" + it.kind;
        req.reference_code = Slurp(it.ref_path);
        req.kernel_code = Slurp(it.sol_path);
        req.device = device;
        req.device_index = f->device_index;
        req.size = f->size;
        req.num_perf_trials = f->perf_trials;
        req.num_correct_trials = f->correct_trials;
        req.timeout_s = f->timeout;
        auto t0 = std::chrono::steady_clock::now();
        it.result = ev->Evaluate(req);
        it.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // One line per result as it lands, so a run cut short still leaves its raw numbers. Written in one piece:
        // memory admission writes its own lines from other threads.
        std::ostringstream line;
        line << req.task_id << ": " << kgym::OutcomeName(it.result.outcome) << " ref_ms "
             << it.result.reference_runtime << " kernel_ms " << it.result.kernel_runtime << " speedup "
             << it.result.speedup << " (" << it.wall_s << " s";
        double waited = AdmissionWait(it.result);
        if (waited > 0) line << ", " << waited << " s of it waiting for memory";
        line << ") " << it.result.outcome_detail.substr(0, 160) << "\n";
        std::lock_guard<std::mutex> l(mu);
        std::fputs(line.str().c_str(), stderr);
      }
    };
    std::vector<std::thread> pool;
    for (int j = 0; j < std::max(1, f->jobs); ++j) pool.emplace_back(work);
    for (auto& t : pool) t.join();
    int expected = 0;
    nlohmann::json raw = nlohmann::json::array();
    std::printf("| task | solution | outcome | ref ms | kernel ms | speedup | as expected |\n|---|---|---|---|---|---|---|\n");
    for (const auto& it : items) {
      bool want_correct = it.kind != "wrong";
      bool ok = (it.result.outcome == kgym::Outcome::kCorrect) == want_correct;
      expected += ok;
      std::printf("| %s/%s | %s | %s | %.3f | %.3f | %.2f | %s |\n", it.level.c_str(), it.task.c_str(),
                  it.kind.c_str(), kgym::OutcomeName(it.result.outcome), it.result.reference_runtime,
                  it.result.kernel_runtime, it.result.speedup, ok ? "yes" : "NO");
      nlohmann::json j = it.result.ToJson();
      j["suite"] = {{"level", it.level}, {"task", it.task}, {"kind", it.kind}, {"as_expected", ok},
                    {"wall_s", it.wall_s}, {"memory_wait_s", AdmissionWait(it.result)}};
      raw.push_back(j);
    }
    std::printf("\n%d of %zu solutions as expected (device %s)\n", expected, items.size(), device.c_str());
    kgym::AdmissionStats as;
    if (ev->Admission(&as)) {
      std::printf("memory admission: budget %s, %lld of %lld evaluations waited for memory (%.1f s in all), %lld ran "
                  "alone as larger than the budget\n",
                  kgym::FormatGB(as.budget_bytes).c_str(), static_cast<long long>(as.waited_total),
                  static_cast<long long>(as.admitted_total), as.wait_seconds_total,
                  static_cast<long long>(as.oversized_total));
    } else {
      std::printf("memory admission: off\n");
    }
    if (!f->out.empty()) std::ofstream(f->out) << raw.dump(1) << "\n";
    return 0;
  };
});
}  // namespace
