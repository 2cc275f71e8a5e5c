// `kgym worker`: pulls jobs that a `kgym serve --redis` API node enqueued, evaluates them on this node's
// devices and returns the results. SIGTERM/SIGINT stop claiming and let running jobs finish within --drain-timeout
// (cli/stop_signals.h); those still running then are stopped and their jobs go back to the queue at once; a second
// signal stops them at once. A worker killed outright loses its leases and its jobs go back to the queue too.
#include <atomic>
#include <cstdio>
#include <thread>

#include "cli/command_registry.h"
#include "cli/evaluator_flags.h"
#include "cli/shared_flags.h"
#include "cli/stop_signals.h"
#include "sched/redis_worker.h"
#include "server/evaluator_factory.h"

namespace {

struct WorkerFlags {
  std::string redis, prefix = "kgym", gpus = "auto", id;
  int slots_per_gpu = 4, cpu_slots = 2, max_retries = 2;
  double lease = 30, backoff = 1.0, drain_timeout = 120;
  kgym::EvaluatorChoice evaluator;
};

int RunWorker(const WorkerFlags& f) {
  std::unique_ptr<kgym::Evaluator> ev;
  kgym::Status s = kgym::MakeEvaluator(f.evaluator, &ev, "kgym worker");
  if (!s.ok()) {
    std::fprintf(stderr, "kgym worker: %s\n", s.ToString().c_str());
    return 1;
  }
  std::string gpus = f.gpus;
  if (gpus == "auto") {
    gpus = "none";
    for (auto& d : ev->Devices())
      if (d.rfind("cuda:", 0) == 0) gpus = "all";
  }
  kgym::RedisWorkerOptions o;
  o.redis_url = f.redis;
  o.prefix = f.prefix;
  o.worker_id = f.id;
  o.lease_ms = static_cast<int64_t>(f.lease * 1000);
  o.max_retries = f.max_retries;
  o.retry_backoff_s = f.backoff;
  s = kgym::ParseDeviceList(gpus, ev->Devices(), f.slots_per_gpu, f.cpu_slots, &o.devices);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym worker: %s\n", s.ToString().c_str());
    return 2;
  }
  kgym::cli::InstallStopSignals();
  kgym::RedisWorker worker(ev.get(), o);
  std::atomic<bool> stop{false}, cut_short{false}, ended{false};
  int stopped = 0;
  std::thread running([&] {
    s = worker.Run(&stop, f.drain_timeout, &cut_short, &stopped);
    ended = true;
  });
  while (!ended && kgym::cli::StopSignalCount() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!ended)
    std::fprintf(stderr,
                 "kgym worker: draining (up to %.0f s for running evaluations; a second signal stops them at once)\n",
                 f.drain_timeout);
  kgym::cli::DrainOrExit("kgym worker", f.drain_timeout, &cut_short, [&] {
    stop = true;
    running.join();
    ev.reset();  // its workers and zygote end here
    return stopped;
  });
  if (!s.ok()) {
    std::fprintf(stderr, "kgym worker: %s\n", s.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "kgym worker: stopped (%d job(s) given back to the queue)\n", stopped);
  return 0;
}

KGYM_REGISTER_COMMAND(
    "worker", "evaluate jobs from a kgym serve --redis API node", [](CLI::App* sub) -> kgym::cli::CommandRunner {
      auto f = std::make_shared<WorkerFlags>();
      kgym::cli::AddSharedOption(sub, "--redis", &f->redis, "the API node's")->required();
      kgym::cli::AddSharedOption(sub, "--redis-prefix", &f->prefix);
      kgym::cli::AddSharedOption(sub, "--gpus", &f->gpus, "0,1,.. | all | none (CPU) | auto");
      sub->add_option("--worker-id", f->id, "name in leases and logs (default host:pid)");
      kgym::cli::AddSharedOption(sub, "--slots-per-gpu", &f->slots_per_gpu);
      kgym::cli::AddSharedOption(sub, "--cpu-slots", &f->cpu_slots);
      sub->add_option("--lease", f->lease, "seconds without a heartbeat before a job is given to another worker");
      kgym::cli::AddSharedOption(sub, "--max-retries", &f->max_retries, "jobs that failed for infrastructure reasons");
      kgym::cli::AddSharedOption(sub, "--retry-backoff", &f->backoff);
      kgym::cli::AddSharedOption(
          sub, "--drain-timeout", &f->drain_timeout,
          "after that, evaluations still running are stopped and their jobs go back to the queue");
      kgym::cli::AddEvaluatorFlags(sub, &f->evaluator);
      return [f] { return RunWorker(*f); };
    });

}  // namespace
