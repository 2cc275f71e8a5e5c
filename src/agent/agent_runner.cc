#include "agent/agent_runner.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "agent/progress.h"
#include "agent/run_dir.h"
#include "core/parallel_for.h"

namespace kgym::agent {

Status RunAgent(const std::vector<Task>& tasks, const AgentRunOptions& opt, TurnLoopDeps deps,
                AgentRunSummary* summary) {
  if (opt.loop.turns < 1) return Status::InvalidArgument("--turns must be >= 1");
  if (opt.loop.iterations > 1 && (opt.loop.keep_turns < 0 || opt.loop.keep_turns >= opt.loop.turns))
    return Status::InvalidArgument("--keep-turns must be in [0, --turns) when --iterations > 1");
  if (opt.samples < 1) return Status::InvalidArgument("--samples must be >= 1");
  RunDir run;
  Status s = RunDir::Open(opt.out_dir, &run);
  if (!s.ok()) return s;
  nlohmann::json config = opt.config_extra;
  config["model"] = opt.loop.model;
  config["turns"] = opt.loop.turns;
  config["iterations"] = opt.loop.iterations;
  config["keep_turns"] = opt.loop.keep_turns;
  config["keep_method"] = opt.loop.keep_method;
  config["samples"] = opt.samples;
  config["run_id"] = opt.loop.run_id;
  config["temperature"] = opt.loop.sampling.temperature;
  config["top_p"] = opt.loop.sampling.top_p;
  config["max_tokens"] = opt.loop.sampling.max_tokens;
  config["total_turns"] = TotalTurns(opt.loop);
  s = run.CheckOrWriteConfig(config, {"model", "turns", "iterations", "keep_turns", "keep_method"});
  if (!s.ok()) return s;

  struct Job {
    const Task* task;
    int sample;
  };
  std::vector<Job> jobs;
  AgentRunSummary sum;
  for (const auto& t : tasks)
    for (int i = 0; i < opt.samples; ++i) {
      ++sum.total;
      const std::string key = t.id + "#" + std::to_string(i);
      if (run.Has(key)) {
        const auto& rec = run.records().at(key);
        if (!(opt.retry_failed && rec.value("status", "") != "done")) {
          ++sum.skipped;
          continue;
        }
      }
      jobs.push_back({&t, i});
    }
  if (opt.limit_trajectories > 0 && static_cast<int>(jobs.size()) > opt.limit_trajectories)
    jobs.resize(opt.limit_trajectories);

  std::counting_semaphore<> llm_slots(std::max(1, opt.llm_concurrency));
  std::counting_semaphore<> eval_slots(std::max(1, opt.eval_concurrency));
  LoopCounters counters;
  if (!deps.llm_slots) deps.llm_slots = &llm_slots;
  if (!deps.eval_slots) deps.eval_slots = &eval_slots;
  if (!deps.counters) deps.counters = &counters;
  ProgressBar bar(sum.total, sum.skipped, deps.counters, opt.progress);
  bar.Start();

  std::atomic<int> failed{0};
  std::mutex err_mu;
  Status write_error;
  int threads = opt.concurrency;
  std::unique_ptr<TurnPhaseGate> gate;
  if (opt.lockstep && !jobs.empty()) {
    // One thread per trajectory: each blocks in its first Generate() until all have arrived, so no thread can
    // take a second trajectory before every one is running.
    threads = static_cast<int>(jobs.size());
    gate = std::make_unique<TurnPhaseGate>(threads);
    deps.gate = gate.get();
  }
  ParallelFor(jobs.size(), threads, [&](size_t i) {
    nlohmann::json rec = RunTrajectory(*jobs[i].task, jobs[i].sample, opt.loop, deps);
    bool ok = rec.value("status", "") == "done";
    if (!ok) ++failed;
    Status ws = run.Append(rec);
    if (!ws.ok()) {
      std::lock_guard<std::mutex> lock(err_mu);
      write_error = ws;
    }
    bar.TrajectoryDone(ok);
  });
  bar.Stop();
  sum.ran = static_cast<int>(jobs.size());
  sum.failed = failed.load();
  if (summary) *summary = sum;
  return write_error;
}

}  // namespace kgym::agent
