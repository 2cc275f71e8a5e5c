#include "sandbox/output_capture.h"

#include <unistd.h>

#include <cerrno>

namespace kgym {

OutputCapture::OutputCapture(int fd, size_t head_bytes, size_t tail_bytes)
    : fd_(fd), head_max_(head_bytes), tail_max_(tail_bytes), thread_([this] { Loop(); }) {}

OutputCapture::~OutputCapture() {
  Join();
  if (fd_ >= 0) ::close(fd_);
}

void OutputCapture::Join() {
  if (thread_.joinable()) thread_.join();
}

void OutputCapture::Loop() {
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::lock_guard<std::mutex> l(mu_);
    size_t k = static_cast<size_t>(n);
    total_ += k;
    size_t off = 0;
    if (head_.size() < head_max_) {
      off = std::min(k, head_max_ - head_.size());
      head_.append(buf, off);
    }
    if (off < k) {
      tail_.append(buf + off, k - off);
      if (tail_.size() > 2 * tail_max_) tail_.erase(0, tail_.size() - tail_max_);
    }
  }
}

std::string OutputCapture::Text() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string tail = tail_.size() > tail_max_ ? tail_.substr(tail_.size() - tail_max_) : tail_;
  size_t omitted = total_ - head_.size() - tail.size();
  if (omitted == 0) return head_ + tail;
  return head_ + "\n[... " + std::to_string(omitted) + " bytes omitted ...]\n" + tail;
}

size_t OutputCapture::total_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return total_;
}

}  // namespace kgym
