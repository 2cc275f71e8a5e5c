// Framing of the private channel between the supervisor and one worker (mirrored by
// python/kgym_harness/wire.py): [u32 header_len][u64 payload_len][header JSON][payload bytes], little endian.
// The payload carries raw tensor bytes; the header describes them. Reads take a deadline so a silent worker
// can never block the supervisor.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace kgym {

using Clock = std::chrono::steady_clock;

struct Frame {
  nlohmann::json header;
  std::string payload;
  Clock::time_point received;  // when the frame's first bytes were seen (the trusted timestamp)
};

// Limits on what a worker may send, so a hostile one cannot make the supervisor allocate without bound.
constexpr uint32_t kMaxHeaderBytes = 64u << 20;
constexpr uint64_t kMaxPayloadBytes = 64ull << 30;

Status SendFrame(int fd, const nlohmann::json& header, const std::string& payload = "");
// Returns Unavailable when the peer closed the channel, Timeout at the deadline.
Status RecvFrame(int fd, Clock::time_point deadline, Frame* out);

}  // namespace kgym
