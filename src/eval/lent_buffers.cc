#include "eval/lent_buffers.h"

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
  if (!Region::Lent(bytes_, &b).ok()) {
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
