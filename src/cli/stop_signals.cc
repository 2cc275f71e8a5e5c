#include "cli/stop_signals.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "sandbox/freezer.h"

namespace kgym::cli {

namespace {

volatile std::sig_atomic_t g_signals = 0;
void OnStopSignal(int) { g_signals = g_signals + 1; }

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

void InstallStopSignals() {
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);
}

int StopSignalCount() { return g_signals; }

void AwaitStopSignal() {
  while (g_signals == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

int DrainOrExit(const std::string& who, double drain_timeout_s, std::atomic<bool>* cut_short,
                const std::function<int()>& shutdown) {
  std::atomic<bool> done{false};
  int result = 0;
  std::thread stopper([&] {
    result = shutdown();
    done = true;
  });
  const int signals_at_start = StopSignalCount();
  double stop_by = Now() + std::max(0.0, drain_timeout_s) + kStopGraceS;
  while (!done) {
    if (!*cut_short && StopSignalCount() > signals_at_start) {
      std::fprintf(stderr, "%s: second signal: stopping running evaluations now\n", who.c_str());
      *cut_short = true;
      stop_by = std::min(stop_by, Now() + kStopGraceS);
    }
    if (Now() > stop_by) {
      std::fprintf(stderr,
                   "%s: evaluations did not stop within %.0f s of the drain's end; exiting (their jobs stay "
                   "unfinished and run after the next start)\n",
                   who.c_str(), kStopGraceS);
      std::fflush(stderr);
      KillWorkerCgroups();  // where workers have cgroups: they and their cgroups go now
      std::_Exit(1);        // the zygote sees its control socket close and takes its workers with it
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stopper.join();
  return result;
}

}  // namespace kgym::cli
