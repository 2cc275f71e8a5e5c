#include "eval/background_check.h"

#include <chrono>

namespace kgym {

namespace {
double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

BackgroundCheck::~BackgroundCheck() {
  if (pending_.valid()) pending_.wait();
}

void BackgroundCheck::Collect() {
  if (!pending_.valid()) return;
  const auto t0 = std::chrono::steady_clock::now();
  pending_.wait();
  wait_s_ += Since(t0);
  busy_s_ += pending_busy_s_;
  std::future<bool> done = std::move(pending_);
  try {
    if (!done.get()) failed_ = true;
  } catch (...) {
    failed_ = true;
    throw;
  }
}

bool BackgroundCheck::Submit(std::function<bool()> check) {
  Collect();
  if (failed_) return false;
  ++checks_;
  pending_ = std::async(std::launch::async, [this, check = std::move(check)] {
    const auto t0 = std::chrono::steady_clock::now();
    struct Book {  // books the run time however the check ends
      double* into;
      std::chrono::steady_clock::time_point t0;
      ~Book() { *into = Since(t0); }
    } book{&pending_busy_s_, t0};
    return check();
  });
  return true;
}

bool BackgroundCheck::Failed() {
  if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) Collect();
  return failed_;
}

bool BackgroundCheck::Wait() {
  Collect();
  return !failed_;
}

}  // namespace kgym
