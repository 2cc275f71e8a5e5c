// TurnPhaseGate: lockstep for trajectories whose LLM and kernel timing share one GPU (a learner that serves its
// own weights on the GPU it times kernels on). Each participating trajectory calls Generate() before every LLM
// call and Evaluate() before every evaluation, and Leave() once when it ends. A call returns when every
// participant still running has reached the same point, so all generation of turn t finishes before any
// evaluation of turn t starts, and all evaluation of turn t before any generation of turn t + 1: generation is
// batched by the engine and never runs beside a timed kernel.
//
// Every participant must run at once (one thread each): a participant that never arrives blocks the others.
// Thread-safe.
#pragma once

#include <barrier>
#include <cstddef>

namespace kgym::agent {

class TurnPhaseGate {
 public:
  explicit TurnPhaseGate(std::ptrdiff_t participants) : barrier_(participants) {}
  void Generate() { barrier_.arrive_and_wait(); }
  void Evaluate() { barrier_.arrive_and_wait(); }
  void Leave() { barrier_.arrive_and_drop(); }

 private:
  std::barrier<> barrier_;
};

}  // namespace kgym::agent
