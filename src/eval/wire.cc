#include "eval/wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kgym {

namespace {

Status WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET) return Status::Unavailable("worker channel closed");
      return Status::IOError(std::string("send: ") + std::strerror(errno));
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return Status::Ok();
}

// Reads exactly n bytes; `first` receives the time the first byte arrived when non-null.
Status ReadAll(int fd, char* p, size_t n, Clock::time_point deadline, Clock::time_point* first) {
  while (n > 0) {
    auto now = Clock::now();
    if (now >= deadline) return Status::Timeout("worker did not answer in time");
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(std::string("poll: ") + std::strerror(errno));
    }
    if (r == 0) continue;
    ssize_t k = ::read(fd, p, n);
    if (k == 0) return Status::Unavailable("worker channel closed");
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return Status::Unavailable("worker channel closed");
      return Status::IOError(std::string("read: ") + std::strerror(errno));
    }
    if (first) {
      *first = Clock::now();
      first = nullptr;
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return Status::Ok();
}

}  // namespace

Status SendFrame(int fd, const nlohmann::json& header, const std::string& payload) {
  std::string h = header.dump();
  char prefix[12];
  uint32_t hl = static_cast<uint32_t>(h.size());
  uint64_t pl = payload.size();
  std::memcpy(prefix, &hl, 4);
  std::memcpy(prefix + 4, &pl, 8);
  Status s = WriteAll(fd, prefix, sizeof prefix);
  if (s.ok()) s = WriteAll(fd, h.data(), h.size());
  if (s.ok() && pl) s = WriteAll(fd, payload.data(), payload.size());
  return s;
}

Status RecvFrame(int fd, Clock::time_point deadline, Frame* out) {
  char prefix[12];
  Status s = ReadAll(fd, prefix, sizeof prefix, deadline, &out->received);
  if (!s.ok()) return s;
  uint32_t hl;
  uint64_t pl;
  std::memcpy(&hl, prefix, 4);
  std::memcpy(&pl, prefix + 4, 8);
  if (hl > kMaxHeaderBytes || pl > kMaxPayloadBytes)
    return Status::InvalidArgument("worker sent an oversized frame");
  std::string h(hl, '\0');
  s = ReadAll(fd, h.data(), hl, deadline, nullptr);
  if (!s.ok()) return s;
  out->payload.assign(pl, '\0');
  if (pl) s = ReadAll(fd, out->payload.data(), pl, deadline, nullptr);
  if (!s.ok()) return s;
  out->header = nlohmann::json::parse(h, nullptr, false);
  if (out->header.is_discarded() || !out->header.is_object())
    return Status::InvalidArgument("worker sent a malformed header");
  return Status::Ok();
}

}  // namespace kgym
