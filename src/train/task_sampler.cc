#include "train/task_sampler.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace kgym::train {

std::vector<size_t> TaskSampler::Permutation(int64_t epoch) const {
  std::vector<size_t> p(n_);
  std::iota(p.begin(), p.end(), size_t{0});
  if (shuffle_) {
    std::mt19937_64 gen(seed_ * 1000003ull + static_cast<uint64_t>(epoch));
    std::shuffle(p.begin(), p.end(), gen);
  }
  return p;
}

std::vector<size_t> TaskSampler::Step(int64_t step) const {
  std::vector<size_t> out;
  if (n_ == 0) return out;
  int64_t cached_epoch = -1;
  std::vector<size_t> perm;
  for (size_t j = 0; j < b_; ++j) {
    const uint64_t g = static_cast<uint64_t>(step) * b_ + j;
    const int64_t epoch = static_cast<int64_t>(g / n_);
    if (epoch != cached_epoch) perm = Permutation(epoch), cached_epoch = epoch;
    out.push_back(perm[g % n_]);
  }
  return out;
}

}  // namespace kgym::train
