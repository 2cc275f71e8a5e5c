// TaskSampler: which prompts a training step uses. The tasks are dealt in epochs; epoch e is a permutation of
// all tasks drawn from (seed, e) (or the file order without shuffle), and step s takes global positions
// [s·B, (s+1)·B) of the concatenated epochs. A step is a pure function of (seed, step), so a resumed run sees
// the prompts the interrupted one would have.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kgym::train {

class TaskSampler {
 public:
  TaskSampler(size_t num_tasks, size_t batch_size, uint64_t seed, bool shuffle)
      : n_(num_tasks), b_(batch_size), seed_(seed), shuffle_(shuffle) {}
  // Task indices of `step` (B of them; distinct when B <= number of tasks within one epoch).
  std::vector<size_t> Step(int64_t step) const;
  int64_t EpochOf(int64_t step) const { return n_ ? static_cast<int64_t>((step * b_) / n_) : 0; }

 private:
  std::vector<size_t> Permutation(int64_t epoch) const;
  size_t n_, b_;
  uint64_t seed_;
  bool shuffle_;
};

}  // namespace kgym::train
