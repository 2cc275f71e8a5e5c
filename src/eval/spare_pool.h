// SparePool: up to `depth` workers per key (a sandbox policy) started ahead of need, so an evaluation does not wait
// for a fork, a sandbox and a CUDA context. Take() hands out a spare for a key and keeps `depth` ready or on their way
// in the background. On an H100 at 16 slots (KernelBench level 2, 2026-12-06), depth 4 once slowed the timed calls of
// the evaluation holding the timing lock (mean bracket 4.0 -> 5.7 ms on one problem): the spares made their CUDA
// contexts beside them. Workers are now frozen by timed holds from their fork on (eval/timing_lock.h), and the
// evaluator's default is 4 for a GPU's policy, 1 for the CPU's (EvaluatorOptions::spare_workers).
//
// Contract:
// - Take(key, deadline, start, &w): if a spare for `key` is ready, *w gets it ("spare"). Else, if a start for `key`
//   is under way that no other waiting Take has counted on, it waits for a spare until `deadline` ("spare_waited"
//   when one came; it started earlier, so it is ready sooner than a fresh start would be). Otherwise *w stays empty
//   ("fresh": the caller starts its own). In every case the pool then starts spares for `key` on threads of their own
//   until `depth` are ready or starting.
// - A spare that failed to start is dropped (a later Take starts another). The caller checks that what it got is
//   still usable (a spare can die while idle).
// - The destructor stops further starts, waits for starts under way and drops the idle spares (destroying a Worker
//   must end its process).
//
// Thread-safe. Worker is any type; `start` runs on the pool's threads and must not call back into the pool.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"

namespace kgym {

template <typename Worker>
class SparePool {
 public:
  using StartFn = std::function<Status(std::unique_ptr<Worker>*)>;

  explicit SparePool(int depth = 1) : depth_(std::max(1, depth)) {}
  SparePool(const SparePool&) = delete;
  SparePool& operator=(const SparePool&) = delete;

  ~SparePool() {
    std::unique_lock<std::mutex> l(mu_);
    stopping_ = true;  // spares being started are dropped when they arrive
    cv_.notify_all();
    cv_.wait(l, [this] { return running_ == 0; });
    keys_.clear();
  }

  // `depth` > 0: this key's depth instead of the pool's.
  std::string Take(const std::string& key, std::chrono::steady_clock::time_point deadline, const StartFn& start,
                   std::unique_ptr<Worker>* out, int depth = 0) {
    const int want = depth > 0 ? depth : depth_;
    std::string how = "fresh";
    std::unique_lock<std::mutex> l(mu_);
    Key& k = keys_[key];  // map nodes stay put: the reference outlives the waits below
    auto take = [&] {
      if (k.idle.empty()) return false;
      *out = std::move(k.idle.front());
      k.idle.pop_front();
      return true;
    };
    if (take()) {
      how = "spare";
    } else if (!stopping_ && k.starting > k.waiting) {  // a start nobody else is counting on
      ++k.waiting;
      cv_.wait_until(l, deadline, [&] { return stopping_ || !k.idle.empty() || k.starting < k.waiting; });
      --k.waiting;
      if (take()) how = "spare_waited";
    }
    while (!stopping_ && static_cast<int>(k.idle.size()) + k.starting < want) StartSpare(&k, start);
    return how;
  }

  // Spares ready now, and Takes waiting for one, over every key (for tests and status).
  size_t Idle() const {
    std::lock_guard<std::mutex> l(mu_);
    size_t n = 0;
    for (const auto& [key, k] : keys_) n += k.idle.size();
    return n;
  }
  int Waiting() const {
    std::lock_guard<std::mutex> l(mu_);
    int n = 0;
    for (const auto& [key, k] : keys_) n += k.waiting;
    return n;
  }

 private:
  struct Key {
    std::deque<std::unique_ptr<Worker>> idle;
    int starting = 0;  // starts under way
    int waiting = 0;   // Takes waiting for one of them
  };

  void StartSpare(Key* k, const StartFn& start) {  // mu_ held
    ++k->starting;
    ++running_;
    std::thread([this, k, start] {
      std::unique_ptr<Worker> w;
      Status s = start(&w);
      {
        std::lock_guard<std::mutex> l(mu_);
        --k->starting;
        if (s.ok() && w && !stopping_) k->idle.push_back(std::move(w));
        cv_.notify_all();
      }
      w.reset();  // a spare not kept ends here, before the destructor may let the pool (and what it needs) go
      std::lock_guard<std::mutex> l(mu_);
      --running_;
      cv_.notify_all();
    }).detach();
  }

  const int depth_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, Key> keys_;
  int running_ = 0;
};

}  // namespace kgym
