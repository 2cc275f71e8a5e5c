// Immutable byte regions shared between processes. Large tensors travel between the workers and the supervisor
// as sealed memfds (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW): once sealed, nobody — not even the process that
// wrote it — can change the bytes, so the supervisor can compare them, cache them and forward the same fd to the
// candidate without a copy and without the candidate being able to alter what the supervisor reads.
//
// The one exception is a lent buffer (Region::Lent): a memfd the supervisor makes and lends a worker to write its
// outputs into, reused from one reply to the next. It is sealed against shrinking and growing (reading it can never
// fault) but not against writes: its bytes are whatever the worker last wrote, so values read from it are compared
// once and then dropped, never cached or forwarded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace kgym {

// The largest region a worker may hand over (as the channel's payload limit, sandbox/channel.h).
constexpr uint64_t kMaxRegionBytes = 64ull << 30;

// Making, sealing and mapping memfds here are fault points (fault/fault_points.h: memfd.create, memfd.seal,
// memfd.map); they fail with IOError as the kernel's calls would.
class Region {
 public:
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  // Takes ownership of `fd`. Refuses (and closes) anything that is not a memfd sealed against writes, shrinking
  // and growing; maps it read-only.
  static Status FromSealedMemfd(int fd, std::shared_ptr<const Region>* out);
  static std::shared_ptr<const Region> FromBytes(std::string bytes);
  // Writes `bytes` into a new memfd, seals it and maps it (what the tests and the supervisor use to hand data out).
  static Status SealedCopy(std::string_view bytes, std::shared_ptr<const Region>* out);
  // A lent buffer of `bytes` bytes (see above): its pages allocated up front and mapped read-only here, so neither
  // the worker's writes nor this process's reads fault them in one at a time.
  static Status Lent(size_t bytes, std::shared_ptr<const Region>* out);

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }  // -1 for heap bytes
  std::string_view view() const { return {data_, size_}; }

 private:
  Region() = default;
  std::string heap_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
  size_t map_len_ = 0;
  int fd_ = -1;
};

// True when `fd` carries all three write seals.
bool IsWriteSealed(int fd);

}  // namespace kgym
