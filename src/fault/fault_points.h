// Fault points: the places in kgym's trusted code that a test can make fail on purpose (SQLite's habit: every
// I/O that can fail in production can be made to fail in a test, and each such failure has a test).
//
// Contract:
// - A fault point is a name checked where the real failure would happen, and the site then fails the way the real
//   thing fails (an errno, an SQLite result code, a dropped connection, a killed process):
//       if (auto f = fault::Hit("store.insert")) rc = f->mode == "busy" ? SQLITE_BUSY : ...;
//   Every name a site may check is listed in Points() below, with its modes; Hit() of any other name is a bug.
// - Unarmed (always, in production), Hit() costs one relaxed atomic load and a branch.
// - Arming: the environment variable KGYM_FAULTS (read once, at the first Hit() or at ArmFromEnvironment()) or Arm()
//   (a test's hook), with a spec "POINT[/SCOPE][@N][*K][:MODE],...": the point's N-th hit fails (default 1), and the
//   K-1 after it too (default K = 1; K = 0: every hit from the N-th on); MODE picks the failure (default: the point's
//   first mode); SCOPE counts only the hits the site names with that scope (channel.read: "hello" for a worker's
//   hello, then the worker's role, "reference" or "candidate"). A spec naming an unknown point or mode is refused
//   whole.
// - Hits are counted per process and per point, from the arming on.
// - KGYM_FAULTS_DIR: when set, a fault that fires writes an empty file there named by its entry ("store.insert@2",
//   "channel.read.candidate@3"),
//   and an entry whose file already exists is not armed. So a fault fires in one process only, even across restarts
//   (a server or learner restarted after the fault goes on without it), and a test can see that it fired.
// - A fault that fires writes one line to stderr: "kgym: fault store.insert@2 fired (full)".
// - Processes that are not C++ (the learner, python/kgym_train/faults.py) read the same variable and act on the
//   points listed for them here; the C++ side ignores those.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kgym::fault {

struct PointInfo {
  const char* name;
  const char* modes;  // space-separated; the first is the default
  const char* where;  // the process and the code that checks it
  const char* what;   // what fails, and what the service is expected to do about it
};

// Every fault point of kgym (C++ and Python), in the order of the evaluation path.
const std::vector<PointInfo>& Points();

struct Fired {
  std::string point;
  std::string mode;
  int64_t hit = 0;
};

namespace internal {
extern std::atomic<int> g_state;  // 0: the environment not read yet, 1: unarmed, 2: armed
std::optional<Fired> SlowHit(std::string_view point, std::string_view scope);
}  // namespace internal

// Whether this hit of `point` (in `scope`, where the site has one) is one to fail, and how.
inline std::optional<Fired> Hit(std::string_view point, std::string_view scope = {}) {
  if (internal::g_state.load(std::memory_order_relaxed) == 1) return std::nullopt;
  return internal::SlowHit(point, scope);
}

// Arms `spec` (replacing whatever was armed; "" disarms). Returns "" or what is wrong with the spec.
std::string Arm(const std::string& spec);
void Disarm();
// Reads KGYM_FAULTS (once per process; later calls return the first answer): "" or what is wrong with it.
std::string ArmFromEnvironment();

// How many times `point` has fired in this process.
int64_t FiredCount(std::string_view point);

}  // namespace kgym::fault
