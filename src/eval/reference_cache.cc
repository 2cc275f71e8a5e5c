#include "eval/reference_cache.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <new>

#include "fault/fault_points.h"

namespace kgym {

size_t ReferenceData::Bytes() const {
  size_t n = 0;
  auto add = [&](const Values& vs) {
    for (const auto& v : vs) n += v.tensor.nbytes;
  };
  for (const auto& t : trials) add(t.inputs), add(t.outputs), add(t.oracle), add(t.oracle_index);
  for (const auto& t : pool) add(t.inputs), add(t.outputs);
  return n;
}

std::shared_ptr<const ReferenceData> ReferenceCache::Get(const std::string& key, const Compute& compute) {
  std::promise<std::shared_ptr<const ReferenceData>> mine;
  Future fut;
  bool here = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      fut = mine.get_future().share();
      entries_[key] = fut;
      here = true;
    } else {
      fut = it->second;
      if (auto o = std::find(order_.begin(), order_.end(), key); o != order_.end())  // kept: used again now
        order_.splice(order_.end(), order_, o);
    }
  }
  if (here) {
    std::shared_ptr<ReferenceData> data = compute();
    mine.set_value(data);
    std::vector<Future> dropped;  // freed after the lock: a reference may be tens of GB
    std::lock_guard<std::mutex> l(mu_);
    if (!data->error_kind.empty() && data->error_kind != "invalid") {
      entries_.erase(key);
    } else {
      try {
        if (fault::Hit("refcache.insert")) throw std::bad_alloc();
        Keep(key, *data, &dropped);
      } catch (const std::bad_alloc&) {
        // No memory to keep it: not kept (the callers waiting have it; the next Get computes it again).
        if (std::find(order_.begin(), order_.end(), key) != order_.end()) {
          order_.remove(key);
          bytes_ -= std::min(bytes_, data->Bytes());
        }
        entries_.erase(key);
      }
    }
  }
  return fut.get();  // outside the lock: another caller may still be computing it
}

void ReferenceCache::Keep(const std::string& key, const ReferenceData& data, std::vector<Future>* dropped) {
  order_.remove(key);
  order_.push_back(key);  // the one allocation: when it throws, nothing below has happened
  bytes_ += data.Bytes();
  dropped->reserve(entries_.size());  // Trim then cannot throw
  Trim(dropped);
}

// Oldest first, past the wanted ones; the newest stays whatever its size.
void ReferenceCache::Trim(std::vector<Future>* dropped) {
  for (auto it = order_.begin(); bytes_ > max_bytes_ && it != order_.end() && std::next(it) != order_.end();) {
    if (Wanted(*it)) {
      ++it;
      continue;
    }
    if (auto victim = entries_.find(*it); victim != entries_.end()) {
      bytes_ -= victim->second.get()->Bytes();
      dropped->push_back(std::move(victim->second));
      entries_.erase(victim);
    }
    it = order_.erase(it);
  }
}

bool ReferenceCache::Wanted(const std::string& key) const {
  for (const auto& [owner, keys] : wanted_)
    if (keys.count(key)) return true;
  return false;
}

void ReferenceCache::Want(const std::string& owner, std::set<std::string> keys) {
  std::vector<Future> dropped;  // freed after the lock
  std::lock_guard<std::mutex> l(mu_);
  if (keys.empty())
    wanted_.erase(owner);
  else
    wanted_[owner] = std::move(keys);
  Trim(&dropped);
}

bool ReferenceCache::Touch(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  if (!entries_.count(key)) return false;
  if (auto o = std::find(order_.begin(), order_.end(), key); o != order_.end()) order_.splice(order_.end(), order_, o);
  return true;
}

bool ReferenceCache::RoomForAnother() {
  std::lock_guard<std::mutex> l(mu_);
  size_t largest = 0;
  for (const auto& key : order_)
    if (auto it = entries_.find(key); it != entries_.end()) largest = std::max(largest, it->second.get()->Bytes());
  return bytes_ + largest <= max_bytes_;
}

std::shared_ptr<const ReferenceData> ReferenceCache::Find(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return nullptr;
  return it->second.get();
}

std::vector<std::pair<std::string, uint64_t>> ReferenceCache::Held() {
  std::vector<std::pair<std::string, uint64_t>> out;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [key, fut] : entries_)  // references still being made belong to their evaluation, not the cache
    if (fut.wait_for(std::chrono::seconds(0)) == std::future_status::ready) out.emplace_back(key, fut.get()->Bytes());
  return out;
}

}  // namespace kgym
