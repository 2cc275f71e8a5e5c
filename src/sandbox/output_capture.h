// OutputCapture: drains a worker's stdout/stderr pipe on its own thread so a candidate that floods its output can
// never block on a full pipe or make the supervisor hold more than a bounded amount: it keeps the first
// `head_bytes` and the last `tail_bytes` and counts the rest.
#pragma once

#include <mutex>
#include <string>
#include <thread>

namespace kgym {

class OutputCapture {
 public:
  OutputCapture(int fd, size_t head_bytes, size_t tail_bytes);
  ~OutputCapture();  // waits for EOF on the pipe (the worker and everything it started have exited)
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  void Join();               // waits for EOF
  std::string Text() const;  // head + "[... N bytes omitted ...]" + tail
  size_t total_bytes() const;

 private:
  void Loop();
  int fd_;
  size_t head_max_, tail_max_;
  mutable std::mutex mu_;
  std::string head_, tail_;  // tail_ is a rolling window
  size_t total_ = 0;
  std::thread thread_;
};

}  // namespace kgym
