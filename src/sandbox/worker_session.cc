#include "sandbox/worker_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
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
                            std::unique_ptr<WorkerSession>* out) {
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
  Status s = zygote->Fork(spec, sv[1], pipefd[1], &w->job_, &w->pid_);
  ::close(sv[1]);
  ::close(pipefd[1]);
  if (!s.ok()) {
    ::close(sv[0]);
    ::close(pipefd[0]);
    return s;
  }
  w->chan_ = sv[0];
  w->capture_ = std::make_unique<OutputCapture>(pipefd[0], 16 * 1024, 48 * 1024);
  Frame f;
  s = w->Recv(deadline, &f);
  if (!s.ok()) {
    *out = std::move(w);
    return s;
  }
  w->hello_ = f.header;
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
  if (!exited_) {
    Kill();
    WorkerExit e;
    WaitExit(Clock::now() + std::chrono::seconds(5), &e);
  }
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

Status WorkerSession::Recv(Clock::time_point deadline, Frame* out) {
  if (!cancel_) return RecvFrame(chan_, deadline, out, fault_scope_);
  // Wait for the first bytes in short slices so a cancel is noticed; then read the frame whole.
  while (true) {
    if (cancel_->load()) return Status::Unavailable("cancelled");
    auto now = Clock::now();
    if (now >= deadline) return Status::Timeout("worker did not answer in time");
    auto slice = std::min(deadline, now + std::chrono::milliseconds(200));
    pollfd pfd{chan_, POLLIN, 0};
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(slice - now).count()) + 1;
    if (::poll(&pfd, 1, ms) > 0) return RecvFrame(chan_, deadline, out, fault_scope_);
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
