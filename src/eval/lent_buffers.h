// LentBuffers: the output buffers (Region::Lent) one candidate's evaluation lends its worker, reused from one reply to
// the next. A fresh memfd per output cost the worker a page fault per 4 KiB page (a level-1 problem's 2.1 GB output:
// ~0.5 s of a 0.9 s correctness trial, and again per kept timed output); a buffer made once and lent again costs
// neither side a fault.
//
// Contract:
// - Each buffer holds `bytes` bytes: what the worker's packing of the reference's outputs takes (LayoutBytes), so the
//   candidate's outputs fit whenever they have the reference's shapes; otherwise the worker sends its own memfd.
// - Free() returns a buffer that nothing outside the pool holds (values read from it released), making one when none
//   is free and fewer than `max_buffers` exist; nullptr when all are held (the request then goes without one) or the
//   memfd cannot be made. A buffer is lent again only once every Value that referred to it is gone.
// - made() counts the buffers made; Owns(region) says whether `region` is one of them.
// - Lending is a fault point (fault/fault_points.h: lent.register): a buffer that cannot be made or lent is no
//   failure of the evaluation, only of the speed-up (the worker then sends its outputs in memfds of its own).
// Thread-safe (the evaluation's thread lends; its checks' thread asks Holds and drops references).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "eval/reference.h"
#include "eval/tensor.h"
#include "sandbox/shm.h"

namespace kgym {

// Outputs of at least this many bytes come back in lent buffers (where the evaluator lends any).
constexpr size_t kLendMinBytes = size_t{1} << 20;

// The size of each buffer lent to the candidates of `ref`: the largest packing (LayoutBytes) of its outputs, over its
// trials and timing sets; 0 where nothing is lent (`lent_buffers` is 0, or the outputs are under kLendMinBytes).
size_t LendBytes(const ReferenceData& ref, int lent_buffers);

// The candidates' outputs an evaluation of `ref` holds in the supervisor at most (for memory admission): where
// buffers are lent (LendBytes), as many buffers, but no more than the trials; otherwise every trial's outputs.
uint64_t HeldOutputBytes(const ReferenceData& ref, int lent_buffers);

class LentBuffers {
 public:
  LentBuffers(size_t bytes, int max_buffers) : bytes_(bytes), max_(max_buffers) {}

  // The bytes a worker's packing of `values` into one region takes: each tensor at a 64-byte aligned offset
  // (python/kgym_harness/tensors.py, ALIGN).
  static size_t LayoutBytes(const Values& values);

  std::shared_ptr<const Region> Free();
  int made() const;
  bool Owns(const Region* region) const;
  // Whether any tensor of `values` was read from one of these buffers.
  bool Holds(const Values& values) const;
  size_t bytes() const { return bytes_; }

 private:
  const size_t bytes_;
  const int max_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const Region>> pool_;
  bool failed_ = false;  // a memfd could not be made: stop trying
};

}  // namespace kgym
