// `kgym serve`: the KernelGYM-compatible evaluation service. One process for one machine (embedded SQLite
// store, in-process scheduler); with --redis it becomes the API node of many, and `kgym worker` processes on
// the GPU nodes run the evaluations. SIGTERM/SIGINT drain (cli/stop_signals.h): no new jobs, running ones finish
// within --drain-timeout or are stopped (their jobs stay in the store); a second signal stops them at once.
#include <cstdio>
#include <fstream>
#include <thread>

#include "cli/command_registry.h"
#include "cli/evaluator_flags.h"
#include "cli/shared_flags.h"
#include "cli/stop_signals.h"
#include "server/evaluator_factory.h"
#include "server/http_server.h"

namespace {

struct ServeFlags {
  std::string host = "127.0.0.1", gpus = "auto", store = "kgym-store.sqlite", redis, prefix = "kgym";
  std::string mode = "default", token_file, sync = "normal";
  int port = 10907, slots_per_gpu = 4, cpu_slots = 2, threads = 512, max_retries = 2, lookahead = 1;
  double ttl = 7 * 24 * 3600.0, drain_timeout = 120, backoff = 1.0;
  kgym::EvaluatorChoice evaluator;
  std::vector<std::string> runs;
};

bool ReadToken(const std::string& path, std::string* token) {
  std::ifstream f(path);
  if (!f) return false;
  std::getline(f, *token);
  while (!token->empty() && (token->back() == '\r' || token->back() == ' ')) token->pop_back();
  return !token->empty();
}

int RunServe(const ServeFlags& f) {
  std::string token;
  if (!f.token_file.empty() && !ReadToken(f.token_file, &token)) {
    std::fprintf(stderr, "kgym serve: --token-file %s is missing or empty\n", f.token_file.c_str());
    return 2;
  }
  std::unique_ptr<kgym::JobStore> store;
  kgym::StoreOptions so;
  so.synchronous = f.sync;
  kgym::Status s = kgym::JobStore::Open(f.store, so, &store);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym serve: %s\n", s.ToString().c_str());
    return 1;
  }
  std::unique_ptr<kgym::Evaluator> evaluator;
  std::unique_ptr<kgym::Dispatcher> dispatcher;
  std::string where;
  if (!f.redis.empty()) {
    dispatcher = kgym::NewRedisDispatcher(f.redis, f.prefix);
    where = "redis " + f.redis + " (run `kgym worker --redis " + f.redis + "` on the GPU nodes)";
  } else {
    s = kgym::MakeEvaluator(f.evaluator, &evaluator, "kgym serve");
    if (!s.ok()) {
      std::fprintf(stderr, "kgym serve: %s\n", s.ToString().c_str());
      return 1;
    }
    std::vector<std::string> available = evaluator->Devices();
    std::string gpus = f.gpus;
    if (gpus == "auto") {
      gpus = "none";
      for (auto& d : available)
        if (d.rfind("cuda:", 0) == 0) gpus = "all";
    }
    kgym::SchedulerOptions opt;
    opt.max_retries = f.max_retries;
    opt.retry_backoff_s = f.backoff;
    opt.reference_lookahead = f.lookahead;
    s = kgym::ParseDeviceList(gpus, available, f.slots_per_gpu, f.cpu_slots, &opt.devices);
    if (!s.ok()) {
      std::fprintf(stderr, "kgym serve: %s\n", s.ToString().c_str());
      return 2;
    }
    for (auto& d : opt.devices) where += d.name + "x" + std::to_string(d.slots) + " ";
    dispatcher = kgym::NewLocalDispatcher(evaluator.get(), opt);
  }
  kgym::ServiceOptions svc_opt;
  svc_opt.result_ttl_s = f.ttl;
  svc_opt.sweep_interval_s = std::max(1.0, std::min(60.0, f.ttl / 10));
  kgym::EvaluationService service(store.get(), dispatcher.get(), svc_opt);
  kgym::HttpOptions ho;
  ho.host = f.host;
  ho.port = f.port;
  ho.threads = f.threads;
  ho.compat = f.mode == "compat";
  ho.token = token;
  ho.run_roots = f.runs;
  kgym::HttpServer http(&service, ho);
  // The port first: a second server on a port in use must refuse before it runs any of the store's jobs.
  s = http.Bind();
  if (!s.ok()) {
    std::fprintf(stderr, "kgym serve: %s\n", s.ToString().c_str());
    return 1;
  }
  int recovered = 0;
  s = service.Start(&recovered);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym serve: %s\n", s.ToString().c_str());
    service.Shutdown(0);
    return 1;
  }
  kgym::cli::InstallStopSignals();
  std::thread serving([&] { http.Serve(); });
  std::printf("kgym serve: listening on http://%s:%d (mode %s, store %s, %d job(s) recovered, devices: %s)\n",
              f.host.c_str(), http.port(), f.mode.c_str(), f.store.c_str(), recovered, where.c_str());
  std::fflush(stdout);
  kgym::cli::AwaitStopSignal();
  std::fprintf(stderr,
               "kgym serve: draining (up to %.0f s for running evaluations; a second signal stops them at once)\n",
               f.drain_timeout);
  // Clients blocked on a running job still get its result while the drain lasts: HTTP stops after it. The whole
  // teardown (connections, workers, the zygote) is under the watchdog, not only the drain.
  std::atomic<bool> cut_short{false};
  int left = kgym::cli::DrainOrExit("kgym serve", f.drain_timeout, &cut_short, [&] {
    const int stopped = service.Shutdown(f.drain_timeout, &cut_short);
    http.Stop();
    serving.join();
    dispatcher.reset();
    evaluator.reset();  // its workers and zygote end here
    return stopped;
  });
  std::fprintf(stderr,
               "kgym serve: stopped (%d evaluation(s) stopped; their jobs and the queued ones stay in the store)\n",
               left);
  return 0;
}

KGYM_REGISTER_COMMAND(
    "serve", "run the KernelGYM-compatible evaluation server", [](CLI::App* sub) -> kgym::cli::CommandRunner {
      auto f = std::make_shared<ServeFlags>();
      kgym::cli::AddSharedOption(sub, "--host", &f->host);
      kgym::cli::AddSharedOption(sub, "--port", &f->port);
      kgym::cli::AddSharedOption(sub, "--gpus", &f->gpus, "0,1,.. | all | none (CPU workers) | auto");
      sub->add_option("--store", f->store, "SQLite store file");
      kgym::cli::AddSharedOption(sub, "--redis", &f->redis, "jobs go there for `kgym worker` processes");
      kgym::cli::AddSharedOption(sub, "--redis-prefix", &f->prefix);
      sub->add_option("--mode", f->mode,
                      "default: KernelGYM's answers on its routes (a request may opt in to kgym's result with "
                      "\"kgym_result\": true); compat: the same without that opt-in")
          ->check(CLI::IsMember({"compat", "default"}));
      sub->add_option("--token-file", f->token_file, "require Authorization: Bearer <first line of this file>");
      kgym::cli::AddSharedOption(sub, "--slots-per-gpu", &f->slots_per_gpu);
      kgym::cli::AddSharedOption(sub, "--cpu-slots", &f->cpu_slots);
      sub->add_option("--reference-lookahead", f->lookahead,
                      "threads per device preparing the references of queued jobs ahead of them (0 = none)")
          ->check(CLI::Range(0, 8));
      sub->add_option("--http-threads", f->threads, "connection threads (clients blocked in POST /evaluate)");
      sub->add_option("--result-ttl", f->ttl, "seconds a finished result is kept");
      kgym::cli::AddSharedOption(sub, "--drain-timeout", &f->drain_timeout,
                                 "after that, evaluations still running are stopped (their jobs stay in the store)");
      kgym::cli::AddSharedOption(sub, "--max-retries", &f->max_retries, "jobs that failed for infrastructure reasons");
      kgym::cli::AddSharedOption(sub, "--retry-backoff", &f->backoff);
      sub->add_option("--sync", f->sync, "store durability: normal (survives a killed process) or full (power loss)")
          ->check(CLI::IsMember({"normal", "full"}));
      sub->add_option(
          "--runs", f->runs,
          "run folders, or folders of them, shown on the dashboard's Runs page (agent, grade, train output)");
      kgym::cli::AddEvaluatorFlags(sub, &f->evaluator);
      return [f] { return RunServe(*f); };
    });

}  // namespace
