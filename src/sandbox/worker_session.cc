#include "sandbox/worker_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "fault/fault_points.h"
#include "sandbox/protocol.h"

namespace kgym {

namespace kind = protocol::kind;
namespace field = protocol::field;

Status WorkerSession::Start(Zygote* zygote, const nlohmann::json& spec, Clock::time_point deadline,
                            std::unique_ptr<WorkerSession>* out, const std::function<void(WorkerSession*)>& on_forked) {
  int sv[2], pipefd[2];
  if (fault::Hit("worker.spawn")) return Status::IOError("socketpair: Too many open files (fault point)");
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::IOError(std::string("socketpair: ") + std::strerror(errno));
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  }
  std::unique_ptr<WorkerSession> w(new WorkerSession());
  w->zygote_ = zygote;
  const FreezeMode freeze = DefaultFreezeMode();
  const std::string cgroup = NewWorkerCgroup();  // "" unless workers are frozen through cgroups
  nlohmann::json forked = spec;
  if (!cgroup.empty()) forked["policy"]["cgroup"] = cgroup;
  Status s = zygote->Fork(forked, sv[1], pipefd[1], &w->job_, &w->pid_);
  ::close(sv[1]);
  ::close(pipefd[1]);
  if (!s.ok()) {
    ::close(sv[0]);
    ::close(pipefd[0]);
    if (!cgroup.empty()) ::rmdir(cgroup.c_str());
    return s;
  }
  // The worker's outside process joins its cgroup before it forks the rest (it says so in its protections); where it
  // could not, its processes are frozen by signals.
  if (freeze != FreezeMode::kOff) w->freezer_ = std::make_unique<WorkerFreezer>(w->pid_, cgroup);
  w->chan_ = sv[0];
  w->capture_ = std::make_unique<OutputCapture>(pipefd[0], 16 * 1024, 48 * 1024);
  if (on_forked) on_forked(w.get());
  Frame f;
  s = w->Recv(deadline, &f);
  if (!s.ok()) {
    *out = std::move(w);
    return s;
  }
  w->hello_ = f.header;
  if (!cgroup.empty() && !w->hello_.value(field::kProtections, nlohmann::json::object()).value("cgroup", false)) {
    w->freezer_ = std::make_unique<WorkerFreezer>(w->pid_, "");
    ::rmdir(cgroup.c_str());
    bool frozen;
    {
      std::lock_guard<std::mutex> l(w->frozen_mu_);
      frozen = w->frozen_;
    }
    if (frozen) w->freezer_->Freeze();  // a hold froze it through the cgroup it never joined
  }
  w->fault_scope_ = spec.value("role", "");
  // The harness is the deepest process of the worker's chain: the outside process itself when there is no PID
  // namespace, else its init's only child. Nothing of the candidate has run yet, so the chain is the harness's own.
  pid_t p = w->pid_;
  for (int depth = 0; depth < 3; ++depth) {
    std::vector<pid_t> kids = ChildProcesses(p);
    if (kids.size() != 1) break;
    p = kids[0];
  }
  w->harness_pid_ = ProcessThreads(p) > 0 ? p : -1;
  w->hello_threads_ = ThreadIds(w->harness_pid_);
  *out = std::move(w);
  return Status::Ok();
}

WorkerSession::~WorkerSession() {
  end_token_.reset();
  if (!exited_) {
    Kill();
    WorkerExit e;
    WaitExit(Clock::now() + std::chrono::seconds(5), &e);
  }
  freezer_.reset();  // its cgroup goes once the worker's processes have
  if (chan_ >= 0) ::close(chan_);
  capture_.reset();  // joins the reader: every process holding the pipe is gone
}

bool WorkerSession::Alive() {
  if (exited_ || killed_ || chan_ < 0) return false;
  pollfd pfd{chan_, POLLIN, 0};
  int r = ::poll(&pfd, 1, 0);
  return r == 0;
}

Status WorkerSession::Send(const nlohmann::json& header, const std::string& payload,
                           const std::vector<std::shared_ptr<const Region>>& regions) {
  return SendFrame(chan_, header, payload, regions);
}

bool WorkerSession::Freeze() {
  StartFreeze();
  return AwaitFrozen(std::chrono::steady_clock::now() + std::chrono::microseconds(kFreezeWaitUs));
}

void WorkerSession::StartFreeze() {
  if (!freezer_) return;
  freezer_->StartFreeze();
  std::lock_guard<std::mutex> l(frozen_mu_);
  if (!frozen_) {
    frozen_ = true;
    frozen_since_ = Clock::now();
  }
}

bool WorkerSession::AwaitFrozen(std::chrono::steady_clock::time_point until) {
  return freezer_ && freezer_->AwaitFrozen(until);
}

void WorkerSession::Thaw() {
  if (!freezer_) return;
  {
    std::lock_guard<std::mutex> l(frozen_mu_);
    if (!frozen_) return;
    frozen_ = false;
    frozen_total_ += Clock::now() - frozen_since_;
  }
  freezer_->Thaw();
}

Clock::duration WorkerSession::FrozenFor() const {
  std::lock_guard<std::mutex> l(frozen_mu_);
  return frozen_total_ + (frozen_ ? Clock::now() - frozen_since_ : Clock::duration{0});
}

Clock::time_point WorkerSession::Due(Clock::time_point deadline) const {
  std::lock_guard<std::mutex> l(frozen_mu_);
  if (frozen_) return Clock::time_point::max();
  return deadline + frozen_total_;
}

Status WorkerSession::Recv(Clock::time_point deadline, Frame* out) {
  // Wait for the first bytes in short slices, so a cancel is noticed and time spent frozen is not counted; then read
  // the frame whole (a worker frozen in the middle of sending one has that frame bounded by the deadline as it stood).
  while (true) {
    if (cancel_ && cancel_->load()) return Status::Unavailable("cancelled");
    auto now = Clock::now();
    const Clock::time_point due = Due(deadline);
    if (now >= due) return Status::Timeout("worker did not answer in time");
    auto slice = std::min(due, now + std::chrono::milliseconds(200));
    pollfd pfd{chan_, POLLIN, 0};
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(slice - now).count()) + 1;
    if (::poll(&pfd, 1, ms) > 0)
      return RecvFrame(chan_, std::max(Due(deadline), now + std::chrono::seconds(1)), out, fault_scope_);
  }
}

Status WorkerSession::RecvReply(Clock::time_point deadline, Frame* out) {
  while (true) {
    Status s = Recv(deadline, out);
    if (!s.ok()) return s;
    const std::string t = out->header.value(field::kType, "");
    if (t == kind::kEvidence) {
      for (const auto& e : out->header.value(field::kItems, nlohmann::json::array())) evidence_.push_back(e);
      continue;
    }
    if (t == kind::kNote) {
      notes_[out->header.value(field::kKey, "note")] = out->header.value(field::kValue, nlohmann::json());
      continue;
    }
    return s;
  }
}

void WorkerSession::Kill() {
  if (pid_ > 0 && !exited_) {
    killed_ = true;
    // C is the outside process of the worker; its death takes the namespace (and all it holds) down.
    // Without a PID namespace the worker leads its own session: kill the group as well.
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
}

bool WorkerSession::WaitExit(Clock::time_point deadline, WorkerExit* out) {
  if (exited_) {
    *out = exit_;
    return true;
  }
  if (!zygote_->WaitExit(job_, deadline, &exit_)) return false;
  exited_ = true;
  *out = exit_;
  return true;
}

bool WorkerSession::orphaned() const { return zygote_ && zygote_->Orphaned(job_); }

std::string WorkerSession::Output() { return capture_ ? capture_->Text() : ""; }
size_t WorkerSession::OutputBytes() { return capture_ ? capture_->total_bytes() : 0; }

}  // namespace kgym
