#include "eval/lent_buffers.h"

#include <algorithm>

#include "fault/fault_points.h"

namespace kgym {

constexpr size_t kAlign = 64;

size_t LentBuffers::LayoutBytes(const Values& values) {
  size_t total = 0;
  for (const auto& v : values)
    if (v.is_tensor) total += (v.tensor.nbytes + kAlign - 1) / kAlign * kAlign;
  return total;
}

std::shared_ptr<const Region> LentBuffers::Free() {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& b : pool_)
    if (b.use_count() == 1) return b;
  if (failed_ || bytes_ == 0 || static_cast<int>(pool_.size()) >= max_) return nullptr;
  std::shared_ptr<const Region> b;
  if (fault::Hit("lent.register") || !Region::Lent(bytes_, &b).ok()) {
    failed_ = true;
    return nullptr;
  }
  pool_.push_back(b);
  return b;
}

int LentBuffers::made() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(pool_.size());
}

size_t LendBytes(const ReferenceData& ref, int lent_buffers) {
  size_t bytes = 0;
  for (const auto* set : {&ref.trials, &ref.pool})
    for (const auto& t : *set) bytes = std::max(bytes, LentBuffers::LayoutBytes(t.outputs));
  return lent_buffers > 0 && bytes >= kLendMinBytes ? bytes : 0;
}

uint64_t HeldOutputBytes(const ReferenceData& ref, int lent_buffers) {
  uint64_t all = 0;
  for (const auto& t : ref.trials)
    for (const auto& v : t.outputs) all += v.tensor.nbytes;
  const size_t one = LendBytes(ref, lent_buffers);
  if (one == 0) return all;
  const uint64_t lent = static_cast<uint64_t>(std::min<size_t>(lent_buffers, ref.trials.size())) * one;
  return std::min(all, lent);
}

bool LentBuffers::Owns(const Region* region) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& b : pool_)
    if (b.get() == region) return true;
  return false;
}

bool LentBuffers::Holds(const Values& values) const {
  for (const auto& v : values)
    if (v.is_tensor && Owns(v.tensor.region.get())) return true;
  return false;
}

}  // namespace kgym
