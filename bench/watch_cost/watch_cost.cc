// bench/watch_cost: what the supervisor's outside watch of a worker (eval/process_watch.h) costs per timed call,
// while the device's timing lock is held. A child process with --threads idle threads stands in for a worker (a
// torch + CUDA + Triton worker has dozens); the bench times the readings the watch is made of and one watched call
// (Before + After: the process CPU clock and the thread list on each side; per-thread schedstat only for threads born
// after hello, none here), the same call with both readings settled as a CPU evaluation's are (every thread's state
// read), --calls times each, and prints one JSON object.
//
//   build/bench/watch_cost/watch_cost --threads 40 --calls 2000
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>
#include <vector>

#include "eval/process_watch.h"
#include "nlohmann/json.hpp"
#include "sandbox/process_stats.h"

namespace {

pid_t SpawnThreads(int n) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<std::thread> ts;
    for (int i = 1; i < n; ++i) ts.emplace_back([] { pause(); });
    char c = 1;
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c;
  (void)!read(ready[0], &c, 1);
  close(ready[0]);
  close(ready[1]);
  return pid;
}

template <typename Fn>
double MicrosPer(int calls, Fn fn) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the cost of the supervisor's outside watch of a worker, per timed call"};
  int threads = 40, calls = 2000;
  app.add_option("--threads", threads, "threads of the watched process");
  app.add_option("--calls", calls, "repetitions of each measurement");
  CLI11_PARSE(app, argc, argv);
  pid_t pid = SpawnThreads(threads);
  if (pid <= 0) return 1;
  nlohmann::json out = {{"threads", kgym::ProcessThreads(pid)}, {"calls", calls}};
  out["process_threads_us"] = MicrosPer(calls, [&] { kgym::ProcessThreads(pid); });
  out["thread_ids_us"] = MicrosPer(calls, [&] { kgym::ThreadIds(pid); });
  out["thread_cpu_ns_us"] = MicrosPer(calls, [&] { kgym::ThreadCpuNs(pid); });         // every thread's schedstat
  out["process_cpu_ns_us"] = MicrosPer(calls, [&] { kgym::ProcessCpuNs(pid); });       // the process CPU clock
  out["runnable_threads_us"] = MicrosPer(calls, [&] { kgym::RunnableThreads(pid); });  // every thread's state
  kgym::ProcessWatch watch(pid, kgym::ThreadIds(pid), /*count_threads=*/true, kgym::CpuClock::kAtOnce);
  out["watched_call_us"] = MicrosPer(calls, [&] {
    watch.Before();
    watch.After();
  });
  // A CPU evaluation's call followed by a measured "between": both readings settle (none of these threads runs).
  kgym::ProcessWatch settled(pid, kgym::ThreadIds(pid), /*count_threads=*/true, kgym::CpuClock::kSettled);
  out["settled_call_us"] = MicrosPer(calls, [&] {
    settled.Before();
    settled.After(true, /*between_follows=*/true);
  });
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  std::cout << out.dump() << std::endl;
  return 0;
}
