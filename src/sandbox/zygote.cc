#include "sandbox/zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "fault/fault_points.h"

namespace kgym {

namespace {
constexpr const char* kEnvAllowlist[] = {
    "PATH", "LANG", "LC_ALL", "TZ", "CUDA_HOME", "LD_LIBRARY_PATH", "TRITON_INTERPRET"};

Status SendWithFds(int sock, const std::string& msg, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(msg.data()), msg.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  std::vector<char> ctrl(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    mh.msg_control = ctrl.data();
    mh.msg_controllen = ctrl.size();
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  }
  while (::sendmsg(sock, &mh, MSG_NOSIGNAL) < 0) {
    if (errno == EINTR) continue;
    return Status::Unavailable(std::string("zygote control channel: ") + std::strerror(errno));
  }
  return Status::Ok();
}
}  // namespace

Status Zygote::Start(const ZygoteOptions& options, std::unique_ptr<Zygote>* out) {
  std::unique_ptr<Zygote> z(new Zygote());
  z->options_ = options;
  Status s = z->Launch();
  if (!s.ok()) return s;
  *out = std::move(z);
  return Status::Ok();
}

Status Zygote::Launch() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::IOError(std::string("socketpair: ") + std::strerror(errno));
  std::vector<std::string> env;
  for (const char* k : kEnvAllowlist)
    if (const char* v = std::getenv(k)) env.push_back(std::string(k) + "=" + v);
  // KGYM_TRITON_PATH: an extra directory holding Triton (CI's CPU interpreter build), searched after the harness.
  const char* triton_path = std::getenv("KGYM_TRITON_PATH");
  env.push_back("PYTHONPATH=" + options_.harness_path +
                (triton_path && *triton_path ? std::string(":") + triton_path : std::string()));
  env.push_back("PYTHONDONTWRITEBYTECODE=1");
  env.push_back("PYTHONUNBUFFERED=1");
  for (const auto& [k, v] : options_.extra_env) env.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string py = options_.python;
  std::vector<std::string> args = {py, "-m", "kgym_harness.zygote"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return Status::IOError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(sv[1], 3);  // dup2 clears CLOEXEC on the new descriptor
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::setsid();
    ::execvpe(py.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  ::close(sv[1]);
  pid_ = pid;
  ctl_fd_ = sv[0];
  // The hello message says the zygote is warm (torch imported). Wait for it here, bounded.
  pollfd pfd{ctl_fd_, POLLIN, 0};
  int r = ::poll(&pfd, 1, 120000);
  char buf[65536];
  ssize_t n = r > 0 ? ::recv(ctl_fd_, buf, sizeof buf, 0) : -1;
  if (n <= 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::close(ctl_fd_);
    return Status::Unavailable("the zygote (" + py + " -m kgym_harness.zygote) did not start: is torch importable by " +
                               py + "? (set KGYM_PYTHON to an interpreter that has torch)");
  }
  hello_ = nlohmann::json::parse(std::string(buf, n), nullptr, false);
  {
    std::lock_guard<std::mutex> l(mu_);
    dead_ = false;
  }
  reader_ = std::thread([this] { ReaderLoop(); });
  return Status::Ok();
}

void Zygote::ReaderLoop() {
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(ctl_fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    auto msg = nlohmann::json::parse(std::string(buf, n), nullptr, false);
    if (!msg.is_object()) continue;
    std::lock_guard<std::mutex> l(mu_);
    int64_t job = msg.value("job", int64_t{-1});
    std::string type = msg.value("type", "");
    if (type == "forked") {
      forked_[job] = msg.value("pid", -1);
      running_.insert(job);
    } else if (type == "exit") {
      running_.erase(job);
      WorkerExit e;
      if (msg.contains("signal")) {
        e.signaled = true;
        e.signal = msg["signal"].get<int>();
      } else {
        e.code = msg.value("code", 0);
      }
      exits_[job] = e;
    } else if (type == "error") {
      errors_[job] = msg.value("message", "fork failed");
    }
    cv_.notify_all();
  }
  std::lock_guard<std::mutex> l(mu_);
  dead_ = true;
  orphaned_.insert(running_.begin(), running_.end());
  running_.clear();
  cv_.notify_all();
}

Status Zygote::Fork(const nlohmann::json& spec, int chan_fd, int out_fd, int64_t* job, pid_t* pid) {
  {
    // One thread replaces a dead zygote, and no request goes out on its control channel meanwhile.
    std::lock_guard<std::mutex> relaunch(send_mu_);
    bool dead;
    {
      std::lock_guard<std::mutex> l(mu_);
      dead = dead_;
    }
    if (dead) {
      Shutdown();
      Status s = Launch();
      if (!s.ok()) return s;
    }
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    *job = next_job_++;
  }
  nlohmann::json msg = spec;
  msg["type"] = "fork";
  msg["job"] = *job;
  if (auto f = fault::Hit("zygote.fork")) {
    // refuse: what the zygote answers when its fork() fails; die: the zygote is gone (SIGKILL), as the request
    // goes out, and everything below meets that as it would a real death.
    if (f->mode == "refuse") return Status::Internal("zygote refused the fork: fork failed: [Errno 11] (fault point)");
    ::kill(pid_, SIGKILL);
  }
  {
    std::lock_guard<std::mutex> l(send_mu_);
    Status s = SendWithFds(ctl_fd_, msg.dump(), {chan_fd, out_fd});
    if (!s.ok()) return s;
  }
  std::unique_lock<std::mutex> l(mu_);
  bool got =
      cv_.wait_for(l, std::chrono::seconds(30), [&] { return forked_.count(*job) || errors_.count(*job) || dead_; });
  if (forked_.count(*job)) {
    *pid = forked_[*job];
    forked_.erase(*job);
    return Status::Ok();
  }
  if (errors_.count(*job)) {
    std::string e = errors_[*job];
    errors_.erase(*job);
    return Status::Internal("zygote refused the fork: " + e);
  }
  return Status::Unavailable(got ? "the zygote died" : "the zygote did not answer a fork request in 30 s");
}

bool Zygote::WaitExit(int64_t job, std::chrono::steady_clock::time_point deadline, WorkerExit* out) {
  std::unique_lock<std::mutex> l(mu_);
  bool got = cv_.wait_until(l, deadline, [&] { return exits_.count(job) > 0 || dead_ || orphaned_.count(job) > 0; });
  if (!got || !exits_.count(job)) return false;
  *out = exits_[job];
  exits_.erase(job);
  return true;
}

bool Zygote::Orphaned(int64_t job) const {
  std::lock_guard<std::mutex> l(mu_);
  return orphaned_.count(job) > 0;
}

nlohmann::json Zygote::Hello() const {
  std::lock_guard<std::mutex> l(mu_);
  return hello_;
}

void Zygote::Shutdown() {
  if (ctl_fd_ >= 0) {
    ::shutdown(ctl_fd_, SHUT_RDWR);
  }
  if (reader_.joinable()) reader_.join();
  if (ctl_fd_ >= 0) ::close(ctl_fd_);
  ctl_fd_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

Zygote::~Zygote() { Shutdown(); }

}  // namespace kgym
