#include "sandbox/channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

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

// Reads exactly n bytes; `first` receives the time the first byte arrived when non-null.
Status ReadAll(int fd, char* p, size_t n, Clock::time_point deadline, Clock::time_point* first) {
  while (n > 0) {
    bool ready = false;
    if (Status w = WaitReadable(fd, deadline, &ready); !w.ok()) return w;
    if (!ready) continue;
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
    if (k == 0) return Status::Unavailable("worker channel closed");
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

Status RecvFrame(int fd, Clock::time_point deadline, Frame* out) {
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
  uint32_t hl;
  uint64_t pl;
  std::memcpy(&hl, prefix, 4);
  std::memcpy(&pl, prefix + 4, 8);
  if (hl > kMaxHeaderBytes || pl > kMaxPayloadBytes) return Status::InvalidArgument("worker sent an oversized frame");
  std::string h(hl, '\0');
  s = ReadAll(fd, h.data(), hl, deadline, nullptr);
  if (!s.ok()) return s;
  out->payload.assign(pl, '\0');
  if (pl) s = ReadAll(fd, out->payload.data(), pl, deadline, nullptr);
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
