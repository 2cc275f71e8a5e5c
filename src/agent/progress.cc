#include "agent/progress.h"

#include <unistd.h>

#include <cstdio>

namespace kgym::agent {

namespace {
std::string Duration(double s) {
  char buf[32];
  int t = static_cast<int>(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof(buf), "%dh%02dm", t / 3600, (t / 60) % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof(buf), "%dm%02ds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof(buf), "%ds", t);
  return buf;
}
}  // namespace

ProgressBar::ProgressBar(int total, int already_done, const LoopCounters* counters, bool enabled, double plain_every_s)
    : total_(total),
      already_(already_done),
      counters_(counters),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO) != 0),
      plain_every_s_(plain_every_s),
      t0_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { Stop(); }

std::string ProgressBar::Line() const {
  const int done = done_.load() + already_;
  const int width = 24;
  int filled = total_ > 0 ? width * done / total_ : width;
  std::string bar(filled, '#');
  bar.resize(width, '.');
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  std::string eta = "--";
  if (done_.load() > 0) eta = Duration(elapsed / done_.load() * (total_ - done));
  char buf[256];
  std::snprintf(buf, sizeof(buf), "[%s] %d/%d trajectories | %d failed | turns %d | llm %d | eval %d | %s | ETA %s",
                bar.c_str(), done, total_, failed_.load(), counters_ ? counters_->turns_done.load() : 0,
                counters_ ? counters_->llm_in_flight.load() : 0, counters_ ? counters_->eval_in_flight.load() : 0,
                Duration(elapsed).c_str(), eta.c_str());
  return buf;
}

void ProgressBar::Start() {
  if (!enabled_ || thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void ProgressBar::TrajectoryDone(bool ok) {
  ++done_;
  if (!ok) ++failed_;
}

void ProgressBar::Loop() {
  auto last_plain = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(tty_ ? 250 : 500));
    if (stop_) break;
    auto now = std::chrono::steady_clock::now();
    if (tty_) {
      std::fprintf(stderr, "\r%s\033[K", Line().c_str());
    } else if (std::chrono::duration<double>(now - last_plain).count() >= plain_every_s_) {
      std::fprintf(stderr, "%s\n", Line().c_str());
      last_plain = now;
    }
  }
}

void ProgressBar::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::fprintf(stderr, tty_ ? "\r%s\033[K\n" : "%s\n", Line().c_str());
}

}  // namespace kgym::agent
