#include "sandbox/channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "fault/fault_points.h"

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

// Waits until `fd` is readable or the deadline passes (Timeout); *ready is false on a spurious wake-up.
Status WaitReadable(int fd, Clock::time_point deadline, bool* ready) {
  auto now = Clock::now();
  if (now >= deadline) return Status::Timeout("worker did not answer in time");
  int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
  pollfd pfd{fd, POLLIN, 0};
  int r = ::poll(&pfd, 1, ms);
  if (r < 0 && errno != EINTR) return Status::IOError(std::string("poll: ") + std::strerror(errno));
  *ready = r > 0;
  return Status::Ok();
}

// The channel closed inside a frame, after `got` of its `part`'s `want` bytes: the sender broke the framing (or died
// while writing, which its exit tells).
Status CutOff(const char* part, size_t got, size_t want) {
  return Status::InvalidArgument("the worker's frame was cut off: the channel closed after " + std::to_string(got) +
                                 " of its " + part + "'s " + std::to_string(want) + " bytes");
}

// Reads exactly n bytes of a frame's `part`.
Status ReadAll(int fd, char* p, size_t n, Clock::time_point deadline, const char* part) {
  const size_t want = n;
  while (n > 0) {
    bool ready = false;
    if (Status w = WaitReadable(fd, deadline, &ready); !w.ok()) return w;
    if (!ready) continue;
    ssize_t k = ::read(fd, p, n);
    if (k == 0) return CutOff(part, want - n, want);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return Status::Unavailable("worker channel closed");
      return Status::IOError(std::string("read: ") + std::strerror(errno));
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return Status::Ok();
}

// Reads a frame's `part`; `cut` (the fault point channel.read:short) stops at half of it, as if the sender had (the
// rest stays unread).
Status ReadPart(int fd, char* p, size_t n, Clock::time_point deadline, const char* part, bool cut) {
  if (!cut) return ReadAll(fd, p, n, deadline, part);
  Status s = ReadAll(fd, p, n / 2, deadline, part);
  return s.ok() ? CutOff(part, n / 2, n) : s;
}

// Reads the 12-byte prefix with recvmsg so file descriptors sent with it are received (and never leaked: every
// fd that arrives is either handed to a Region or closed).
Status ReadPrefix(int fd, char* p, Clock::time_point deadline, Clock::time_point* first, std::vector<int>* fds) {
  size_t n = 12, got = 0;
  while (got < n) {
    bool ready = false;
    if (Status w = WaitReadable(fd, deadline, &ready); !w.ok()) return w;
    if (!ready) continue;
    iovec iov{p + got, n - got};
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxRegions)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl;
    msg.msg_controllen = sizeof ctrl;
    ssize_t k = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return Status::Unavailable("worker channel closed");
      return Status::IOError(std::string("recvmsg: ") + std::strerror(errno));
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        size_t cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const int* in = reinterpret_cast<const int*>(CMSG_DATA(c));
        for (size_t i = 0; i < cnt; ++i) fds->push_back(in[i]);
      }
    }
    if (k == 0) return got == 0 ? Status::Unavailable("worker channel closed") : CutOff("prefix", got, n);
    if (first) {
      *first = Clock::now();
      first = nullptr;
    }
    got += static_cast<size_t>(k);
  }
  return Status::Ok();
}

}  // namespace

Status SendFrame(int fd, const nlohmann::json& header_in, const std::string& payload,
                 const std::vector<std::shared_ptr<const Region>>& regions) {
  std::vector<int> fds;
  for (const auto& r : regions)
    if (r && r->fd() >= 0) fds.push_back(r->fd());
  if (fds.size() != regions.size()) return Status::InvalidArgument("only memfd regions can be sent");
  if (fds.size() > kMaxRegions) return Status::InvalidArgument("too many regions in one frame");
  nlohmann::json header = header_in;
  if (!fds.empty()) header["regions"] = fds.size();
  std::string h = header.dump();
  char prefix[12];
  uint32_t hl = static_cast<uint32_t>(h.size());
  uint64_t pl = payload.size();
  std::memcpy(prefix, &hl, 4);
  std::memcpy(prefix + 4, &pl, 8);
  Status s;
  if (fds.empty()) {
    s = WriteAll(fd, prefix, sizeof prefix);
  } else {
    iovec iov{prefix, sizeof prefix};
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxRegions)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    ssize_t k;
    do k = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    while (k < 0 && errno == EINTR);
    if (k < 0) {
      if (errno == EPIPE || errno == ECONNRESET) return Status::Unavailable("worker channel closed");
      return Status::IOError(std::string("sendmsg: ") + std::strerror(errno));
    }
    if (static_cast<size_t>(k) < sizeof prefix) s = WriteAll(fd, prefix + k, sizeof prefix - static_cast<size_t>(k));
  }
  if (s.ok()) s = WriteAll(fd, h.data(), h.size());
  if (s.ok() && pl) s = WriteAll(fd, payload.data(), payload.size());
  return s;
}

Status RecvFrame(int fd, Clock::time_point deadline, Frame* out, const std::string& fault_scope) {
  char prefix[12];
  std::vector<int> fds;
  out->regions.clear();
  Status s = ReadPrefix(fd, prefix, deadline, &out->received, &fds);
  // Wrap every received fd at once so none leaks on an error path.
  std::vector<std::shared_ptr<const Region>> regions;
  Status rs = Status::Ok();
  for (int f : fds) {
    std::shared_ptr<const Region> r;
    Status one = Region::FromSealedMemfd(f, &r);
    if (!one.ok() && rs.ok()) rs = one;
    if (one.ok()) regions.push_back(std::move(r));
  }
  if (!s.ok()) return s;
  // The fault point channel.read (fault/fault_points.h): what this process would read were the sender to stop
  // inside the prefix (eof), to send a length past the limits (garbage) or to stop inside the payload (short).
  const auto fault = fault::Hit("channel.read", fault_scope);
  if (fault && fault->mode == "eof") return CutOff("prefix", 5, 12);
  uint32_t hl;
  uint64_t pl;
  std::memcpy(&hl, prefix, 4);
  std::memcpy(&pl, prefix + 4, 8);
  if (fault && fault->mode == "garbage") hl = 0xfffffff0u;
  if (hl > kMaxHeaderBytes || pl > kMaxPayloadBytes) return Status::InvalidArgument("worker sent an oversized frame");
  std::string h(hl, '\0');
  const bool cut = fault && fault->mode == "short";
  s = ReadPart(fd, h.data(), hl, deadline, "header", cut && pl == 0);
  if (!s.ok()) return s;
  out->payload.assign(pl, '\0');
  if (pl) s = ReadPart(fd, out->payload.data(), pl, deadline, "payload", cut);
  if (!s.ok()) return s;
  out->header = nlohmann::json::parse(h, nullptr, false);
  if (out->header.is_discarded() || !out->header.is_object())
    return Status::InvalidArgument("worker sent a malformed header");
  if (!rs.ok()) return rs;
  size_t want = 0;
  if (out->header.contains("regions")) {
    if (!out->header["regions"].is_number_unsigned()) return Status::InvalidArgument("bad 'regions' in a frame");
    want = out->header["regions"].get<size_t>();
  }
  if (want != regions.size())
    return Status::InvalidArgument("worker's frame announced " + std::to_string(want) + " shared-memory region(s), " +
                                   std::to_string(regions.size()) + " arrived");
  out->regions = std::move(regions);
  return Status::Ok();
}

}  // namespace kgym
