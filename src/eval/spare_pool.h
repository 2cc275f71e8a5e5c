// SparePool: at most one worker per key (a sandbox policy) started ahead of need, so an evaluation does not wait for
// a fork, a sandbox and a CUDA context. Take() hands out the spare for a key and starts the next one in the
// background.
//
// Contract:
// - Take(key, deadline, start, &w): if a spare for `key` is ready, *w gets it ("spare"). If one is being started, it
//   waits for it until `deadline` ("spare_waited" when it came; it started earlier, so it is ready sooner than a fresh
//   start would be, and a fresh start would compete with it for the same CPU and device). Otherwise *w stays empty
//   ("fresh": the caller starts its own). In every case, unless a start for `key` is already under way, the next
//   spare is started with `start` on a thread of its own.
// - A spare that failed to start is dropped (the next Take starts another). The caller checks that what it got is
//   still usable (a spare can die while idle).
// - The destructor stops further starts, waits for starts under way and drops the idle spares (destroying a Worker
//   must end its process).
//
// Thread-safe. Worker is any type; `start` runs on the pool's threads and must not call back into the pool.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "core/status.h"

namespace kgym {

template <typename Worker>
class SparePool {
 public:
  using StartFn = std::function<Status(std::unique_ptr<Worker>*)>;

  SparePool() = default;
  SparePool(const SparePool&) = delete;
  SparePool& operator=(const SparePool&) = delete;

  ~SparePool() {
    std::unique_lock<std::mutex> l(mu_);
    stopping_ = true;  // spares being started are dropped when they arrive
    cv_.wait(l, [this] { return running_ == 0; });
    idle_.clear();
  }

  std::string Take(const std::string& key, std::chrono::steady_clock::time_point deadline, const StartFn& start,
                   std::unique_ptr<Worker>* out) {
    std::string how = "fresh";
    std::unique_lock<std::mutex> l(mu_);
    auto take = [&] {
      auto it = idle_.find(key);
      if (it == idle_.end()) return false;
      *out = std::move(it->second);
      idle_.erase(it);
      return true;
    };
    if (take()) {
      how = "spare";
    } else if (!stopping_ && starting_.count(key)) {
      cv_.wait_until(l, deadline, [&] { return stopping_ || idle_.count(key) || !starting_.count(key); });
      if (take()) how = "spare_waited";
    }
    if (!stopping_ && !starting_.count(key)) StartSpare(key, start);
    return how;
  }

  // Spares ready now (for tests and status).
  size_t Idle() const {
    std::lock_guard<std::mutex> l(mu_);
    return idle_.size();
  }

 private:
  void StartSpare(const std::string& key, const StartFn& start) {  // mu_ held
    starting_.insert(key);
    ++running_;
    std::thread([this, key, start] {
      std::unique_ptr<Worker> w;
      Status s = start(&w);
      {
        std::lock_guard<std::mutex> l(mu_);
        starting_.erase(key);
        if (s.ok() && w && !stopping_ && !idle_.count(key)) idle_[key] = std::move(w);
      }
      w.reset();  // a spare not kept ends here, before the destructor may let the pool (and what it needs) go
      std::lock_guard<std::mutex> l(mu_);
      --running_;
      cv_.notify_all();
    }).detach();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::unique_ptr<Worker>> idle_;
  std::set<std::string> starting_;
  int running_ = 0;
};

}  // namespace kgym
