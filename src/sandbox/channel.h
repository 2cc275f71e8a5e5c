// Framing of the private channel between the supervisor and one worker (mirrored by python/kgym_harness/channel.py;
// what is said on it is sandbox/protocol.h): [u32 header_len][u64 payload_len][header JSON][payload bytes], little
// endian; large tensors ride along as sealed memfds passed with the prefix (SCM_RIGHTS).
// The payload carries raw tensor bytes; the header describes them. Reads take a deadline so a silent worker
// can never block the supervisor.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "sandbox/shm.h"

namespace kgym {

using Clock = std::chrono::steady_clock;

struct Frame {
  nlohmann::json header;
  std::string payload;
  // Sealed memfds that came with the frame (header "regions": n), already checked and mapped read-only.
  std::vector<std::shared_ptr<const Region>> regions;
  Clock::time_point received;  // when the frame's first bytes were seen (the trusted timestamp)
};

// Limits on what a worker may send, so a hostile one cannot make the supervisor allocate without bound.
constexpr uint32_t kMaxHeaderBytes = 64u << 20;
constexpr uint64_t kMaxPayloadBytes = 64ull << 30;
constexpr size_t kMaxRegions = 64;

// Regions with an fd travel as SCM_RIGHTS with the frame's prefix; the header gets "regions": n.
Status SendFrame(int fd, const nlohmann::json& header, const std::string& payload = "",
                 const std::vector<std::shared_ptr<const Region>>& regions = {});
// Returns Unavailable when the peer closed the channel between frames, InvalidArgument when what it sent breaks the
// framing (a frame cut off inside, a length past the limits, a malformed header, regions that do not match),
// IOError when this process's own reading or mapping failed, Timeout at the deadline. A fault point
// (fault/fault_points.h: channel.read, in `fault_scope`: the sender's role).
Status RecvFrame(int fd, Clock::time_point deadline, Frame* out, const std::string& fault_scope = "");

}  // namespace kgym
