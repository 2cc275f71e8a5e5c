// ProgressBar: one status line on stderr (trajectories done/total, turns, LLM calls and evaluations in
// flight, ETA), redrawn in place on a terminal and printed as plain lines at most every `plain_every_s`
// otherwise (logs, CI). Runs its own thread between Start() and Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "agent/turn_loop.h"

namespace kgym::agent {

class ProgressBar {
 public:
  ProgressBar(int total, int already_done, const LoopCounters* counters, bool enabled, double plain_every_s = 10);
  ~ProgressBar();
  void Start();
  void TrajectoryDone(bool ok);
  void Stop();  // prints the final line

  // The text of the status line (exposed for tests).
  std::string Line() const;

 private:
  void Loop();
  const int total_, already_;
  const LoopCounters* counters_;
  const bool enabled_, tty_;
  const double plain_every_s_;
  std::atomic<int> done_{0}, failed_{0};
  std::chrono::steady_clock::time_point t0_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace kgym::agent
