// BackgroundCheck: checks (a comparison of fetched outputs against the reference) run on a thread of their own, one
// at a time, while the caller's exchange with a worker goes on. At most one check is outstanding, so the memory held
// is one check's input; the caller learns a check's result when it submits the next one, polls, or waits at the end.
//
// Contract:
// - Submit(check) first waits for the outstanding check; when every check so far passed, it starts `check` and
//   returns true, otherwise it drops `check` and returns false (a failed check ends the checking).
// - Failed() says, without waiting, whether a finished check returned false.
// - Wait() waits for the outstanding check and returns true when every check passed. The destructor waits too.
// - A check that throws counts as failed and its exception is rethrown by the Submit() or Wait() that collects it.
// - wait_s(): the caller's time blocked in Submit()/Wait() on a check; busy_s(): the checks' own run time.
// Not thread-safe: one caller thread.
#pragma once

#include <functional>
#include <future>

namespace kgym {

class BackgroundCheck {
 public:
  BackgroundCheck() = default;
  ~BackgroundCheck();
  BackgroundCheck(const BackgroundCheck&) = delete;
  BackgroundCheck& operator=(const BackgroundCheck&) = delete;

  bool Submit(std::function<bool()> check);
  bool Failed();
  bool Wait();

  double wait_s() const { return wait_s_; }
  double busy_s() const { return busy_s_; }
  int checks() const { return checks_; }

 private:
  void Collect();  // waits for the outstanding check (if any) and records its result

  std::future<bool> pending_;
  bool failed_ = false;
  int checks_ = 0;
  double wait_s_ = 0, busy_s_ = 0;
  double pending_busy_s_ = 0;  // written by the check's thread, read after its future is ready
};

}  // namespace kgym
