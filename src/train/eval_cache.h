// SharedEvalBackend: an EvalBackend in front of the gym that evaluates identical code once. Requests whose
// reference, candidate code and evaluation settings are the same share one evaluation; a request that arrives
// while the first is running waits for it. Each caller gets the result under its own task_id, with
// metadata.kgym_shared_with naming the task id that was evaluated. A re-evaluation (task id ending "-rerun", the
// anomaly re-run of Dr.Kernel's reward manager) is keyed apart from the first, so it is still a second
// measurement. Clear() forgets every result (called once per training step for gym.cache=step). Failed
// evaluations (no verdict) are not kept.
//
// Why: rollouts of a memorising or converging policy repeat programs verbatim; evaluating each copy costs GPU time
// and gives the same program rewards from different noise draws.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "agent/eval_backend.h"

namespace kgym::train {

class SharedEvalBackend : public agent::EvalBackend {
 public:
  explicit SharedEvalBackend(agent::EvalBackend* inner) : inner_(inner) {}
  Status Evaluate(const EvalRequest& req, nlohmann::json* result) override;
  std::string Describe() const override { return inner_->Describe() + " (identical code evaluated once)"; }
  void Clear();
  int evaluations() const;  // evaluations that reached the gym since the last Clear()
  int shared() const;       // requests answered from another's evaluation since the last Clear()

 private:
  struct Entry {
    bool done = false;
    Status status;
    nlohmann::json result;
    std::string task_id;
  };
  static std::string Key(const EvalRequest& req);

  agent::EvalBackend* inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  int evaluations_ = 0, shared_ = 0;
};

}  // namespace kgym::train
