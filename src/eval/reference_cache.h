// ReferenceCache: the reference data of each task configuration (eval/reference.h), computed once however many
// evaluations ask for it at the same time, and kept in memory for later ones up to a byte budget.
//
// Contract:
// - Get(key, compute): the data for `key`. If it is kept, at once; if another caller is computing it, after waiting for
//   that caller; else this caller runs `compute` (without any lock held) and every caller waiting for the key gets
//   its result.
// - A result whose error_kind is set and is not "invalid" (an infrastructure failure: a timeout, no worker) is handed
//   to the callers waiting for it but not kept: the next Get computes again. A broken reference ("invalid") is kept
//   like a working one.
// - Kept bytes (ReferenceData::Bytes) stay within max_bytes by dropping the least recently used entries (made or
//   got), but never the newest one nor one that is wanted. Callers still holding a dropped entry keep it alive.
// - Want(owner, keys): the references `owner` (a device's scheduler) will ask for next; they are not dropped while
//   any owner wants them, even past max_bytes (memory admission counts what is kept as resident), and the cache is
//   trimmed to its budget again as soon as they are no longer wanted. Replaces the owner's earlier keys.
// - Keeping a computed entry may fail for want of memory (std::bad_alloc; a fault point, fault/fault_points.h:
//   refcache.insert): the entry is then not kept, as if it had been dropped at once.
// - Touch(key): whether `key` is kept or being made, without computing it; a kept one counts as used now.
// - RoomForAnother(): whether one more entry as large as the largest kept one fits without dropping any (a look-ahead
//   must not push out references that queued evaluations are about to use).
// - Held() lists the kept, complete entries (for memory admission, which counts them as resident); Find(key) gives a
//   kept, complete one (null otherwise) without counting it as used.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "eval/reference.h"

namespace kgym {

class ReferenceCache {
 public:
  using Compute = std::function<std::shared_ptr<ReferenceData>()>;

  explicit ReferenceCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  std::shared_ptr<const ReferenceData> Get(const std::string& key, const Compute& compute);
  std::vector<std::pair<std::string, uint64_t>> Held();
  std::shared_ptr<const ReferenceData> Find(const std::string& key);
  bool RoomForAnother();
  bool Touch(const std::string& key);  // kept or being made; a kept one counts as used now
  void Want(const std::string& owner, std::set<std::string> keys);

 private:
  using Future = std::shared_future<std::shared_ptr<const ReferenceData>>;
  // mu_ held. What they drop goes to `dropped`, for the caller to free once it has let go of mu_.
  void Keep(const std::string& key, const ReferenceData& data, std::vector<Future>* dropped);
  void Trim(std::vector<Future>* dropped);    // down to max_bytes_
  bool Wanted(const std::string& key) const;  // mu_ held

  const size_t max_bytes_;
  std::mutex mu_;
  std::map<std::string, Future> entries_;
  std::list<std::string> order_;  // kept keys, least recently used first
  size_t bytes_ = 0;
  std::map<std::string, std::set<std::string>> wanted_;  // by owner
};

}  // namespace kgym
