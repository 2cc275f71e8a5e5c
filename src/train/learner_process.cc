#include "train/learner_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/http_util.h"
#include "core/runtime_files.h"
#include "fault/fault_points.h"
#include "train/learner_protocol.h"

namespace kgym::train {

namespace {

std::string Tail(const std::string& path, size_t max_bytes = 4000) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string s = buf.str();
  return s.size() > max_bytes ? "..." + s.substr(s.size() - max_bytes) : s;
}

// Where the learner explains a stop on bad input (learner_protocol.h, kArgErrorFile): beside the run's config.
std::string ErrorFile(const LearnerLaunch& l) {
  return (l.config_path.empty() ? std::filesystem::temp_directory_path().string() + "/kgym_train" : l.config_path) +
         ".error";
}

// The learner's own message when it stopped on bad input: its error file written (under torchrun the launcher's
// exit code replaces the rank's kExitUserError, so the file decides), or kExitUserError alone.
Status UserErrorOf(int wait_status, const std::string& error_file) {
  std::ifstream in(error_file);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string msg = buf.str();
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  const bool flagged = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == protocol::kExitUserError;
  if (msg.empty() && !flagged) return Status::Ok();
  return Status::InvalidArgument(msg.empty() ? "the learner refused its input (see the messages above)" : msg);
}

std::vector<std::string> Argv(const LearnerLaunch& l, const std::string& python) {
  std::vector<std::string> a = {protocol::kArgErrorFile, ErrorFile(l), "serve", "--config",
                                l.config_path,           "--host",     l.host,  "--port",
                                std::to_string(l.port),  "--name",     l.name};
  if (!l.model.empty()) a.insert(a.end(), {"--model", l.model});
  if (!l.resume.empty()) a.insert(a.end(), {"--resume", l.resume});
  if (l.train) a.push_back("--train");
  if (!l.tensorboard_dir.empty()) a.insert(a.end(), {"--out-dir", l.tensorboard_dir});
  return LearnerCommand(python, l.nproc_per_node, a);
}

// The child's environment, built before fork: between fork and exec only async-signal-safe calls are allowed
// (another thread may hold malloc's lock).
std::vector<std::string> ChildEnv(const std::string& pythonpath, const std::vector<int>& devices) {
  std::vector<std::string> base;
  for (char** e = environ; *e; ++e) base.emplace_back(*e);
  return LearnerEnvironment(base, pythonpath, LearnerPackagesDir(), devices);
}

std::vector<char*> Pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

Status LearnerPlacement(const nlohmann::json& trainer, LearnerLaunch* l) {
  const auto& n = trainer.contains("nproc_per_node") ? trainer["nproc_per_node"] : nlohmann::json(1);
  if (!n.is_number_integer() || n.get<int>() < 1)
    return Status::InvalidArgument("trainer.nproc_per_node must be an integer >= 1, got " + n.dump());
  l->nproc_per_node = n.get<int>();
  l->devices.clear();
  const auto& d = trainer.contains("devices") ? trainer["devices"] : nlohmann::json();
  if (d.is_null()) return Status::Ok();
  if (!d.is_array() || d.empty())
    return Status::InvalidArgument("trainer.devices must be null or a non-empty list of GPU indices, got " + d.dump());
  for (const auto& x : d) {
    if (!x.is_number_integer() || x.get<int>() < 0)
      return Status::InvalidArgument("trainer.devices must hold GPU indices (integers >= 0), got " + d.dump());
    l->devices.push_back(x.get<int>());
  }
  if (static_cast<int>(l->devices.size()) < l->nproc_per_node)
    return Status::InvalidArgument("trainer.nproc_per_node is " + std::to_string(l->nproc_per_node) +
                                   " but trainer.devices names only " + std::to_string(l->devices.size()) +
                                   " GPU(s): " + d.dump());
  return Status::Ok();
}

std::vector<std::string> LearnerCommand(const std::string& python, int nproc, const std::vector<std::string>& args) {
  std::vector<std::string> a = {python, "-u", "-m"};
  if (nproc > 1) {
    std::string map;
    for (int r = 1; r < nproc; ++r) map += (r > 1 ? "," : "") + std::to_string(r) + ":1";
    a.insert(a.end(), {"torch.distributed.run", "--standalone", "--nproc_per_node", std::to_string(nproc),
                       "--redirects", map, "--tee", map, "-m"});
  }
  a.push_back("kgym_train");
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

std::vector<std::string> LearnerEnvironment(const std::vector<std::string>& base, const std::string& pythonpath,
                                            const std::string& train_pkgs, const std::vector<int>& devices) {
  static const char* kNvls[] = {"NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1"};
  std::vector<std::string> replaced = {"PYTHONPATH=", "KGYM_TRAIN_PKGS=", "PYTHONUNBUFFERED="};
  if (!devices.empty()) replaced.push_back("CUDA_VISIBLE_DEVICES=");
  for (const char* kv : kNvls) replaced.push_back(std::string(kv).substr(0, std::string(kv).find('=') + 1));
  std::vector<std::string> env;
  for (const auto& kv : base) {
    bool drop = false;
    for (const auto& key : replaced) drop |= kv.rfind(key, 0) == 0;
    if (!drop) env.push_back(kv);
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("PYTHONUNBUFFERED=1");
  if (!train_pkgs.empty()) env.push_back("KGYM_TRAIN_PKGS=" + train_pkgs);
  if (!devices.empty()) {
    std::string list;
    for (size_t i = 0; i < devices.size(); ++i) list += (i ? "," : "") + std::to_string(devices[i]);
    env.push_back("CUDA_VISIBLE_DEVICES=" + list);
  }
  for (const char* kv : kNvls) env.emplace_back(kv);
  return env;
}

Status LearnerPythonPath(std::string* out) {
  const std::string pkg = PythonPackageDir("kgym_train");
  if (pkg.empty())
    return Status::NotFound("cannot find the kgym_train package (looked in " + RuntimeSearchDescription("kgym_train") +
                            ")");
  std::string path = pkg;
  if (const char* p = std::getenv("PYTHONPATH"); p && *p) path += std::string(":") + p;
  *out = path;
  return Status::Ok();
}

Status RunLearnerCommand(const std::string& configured_python, const std::vector<std::string>& args,
                         const LearnerLaunch& placement) {
  const std::string python = PythonInterpreter(configured_python);
  std::string pythonpath;
  Status s = LearnerPythonPath(&pythonpath);
  if (!s.ok()) return s;
  const std::string error_file = ErrorFile(placement);
  std::error_code ec;
  std::filesystem::remove(error_file, ec);
  std::vector<std::string> module_args = {protocol::kArgErrorFile, error_file};
  module_args.insert(module_args.end(), args.begin(), args.end());
  std::vector<std::string> argv_s = LearnerCommand(python, placement.nproc_per_node, module_args);
  std::vector<std::string> env_s = ChildEnv(pythonpath, placement.devices);
  std::vector<char*> argv = Pointers(argv_s), envp = Pointers(env_s);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return Status::IOError("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    execvpe(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  if (Status u = UserErrorOf(status, error_file); !u.ok()) return u;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return Status::NotFound("cannot run " + python + " -m kgym_train (interpreter missing?)");
  return Status::Internal(python + " -m kgym_train " + (args.empty() ? "" : args[0]) + " failed (" +
                          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                             : "signal " + std::to_string(WTERMSIG(status))) +
                          ")");
}

LearnerProcess::~LearnerProcess() { Stop(); }

Status LearnerProcess::Start(const LearnerLaunch& l) {
  const std::string python = PythonInterpreter(l.python);
  std::string pythonpath;
  if (Status s = LearnerPythonPath(&pythonpath); !s.ok()) return s;
  log_path_ = l.log_path;
  std::error_code ec;
  std::filesystem::remove(ErrorFile(l), ec);
  int log_fd = open(l.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::IOError("cannot open the learner log " + l.log_path);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    close(log_fd);
    return Status::IOError("pipe failed");
  }
  std::vector<std::string> args = Argv(l, python);
  std::vector<std::string> env_s = ChildEnv(pythonpath, l.devices);
  std::vector<char*> argv = Pointers(args), envp = Pointers(env_s);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log_fd), close(pipefd[0]), close(pipefd[1]);
    return Status::IOError("fork failed");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    dup2(pipefd[1], STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execvpe(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(pipefd[1]);
  pid_ = pid;
  out_fd_ = pipefd[0];
  // Wait for the ready line; everything the child prints goes to the log too.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(l.startup_timeout_s);
  std::string pending;
  int port = -1;
  while (port < 0) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      close(log_fd);
      if (Status u = UserErrorOf(status, ErrorFile(l)); !u.ok()) return u;
      return Status::Internal("the learner exited during startup (" + python + " -m kgym_train serve); its log " +
                              l.log_path + " ends with:\n" + Tail(l.log_path));
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      close(log_fd);
      Stop();
      return Status::Timeout("the learner did not get ready within " + std::to_string(l.startup_timeout_s) +
                             " s; its log " + l.log_path + " ends with:\n" + Tail(l.log_path));
    }
    pollfd pfd{out_fd_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 200))) <= 0) continue;
    char buf[4096];
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n <= 0) continue;
    (void)!write(log_fd, buf, static_cast<size_t>(n));
    pending.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      const std::string line = pending.substr(0, nl);
      const std::string key = std::string(protocol::kReadyLine) + " port=";
      if (line.rfind(key, 0) == 0) port = std::atoi(line.c_str() + key.size());
    }
  }
  base_url_ = "http://" + l.host + ":" + std::to_string(port);
  const int fd = out_fd_;
  drain_ = std::thread([fd, log_fd] {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) (void)!write(log_fd, buf, static_cast<size_t>(n));
    close(log_fd);
  });
  return Status::Ok();
}

void LearnerProcess::Stop() {
  if (pid_ > 0) {
    nlohmann::json ignored;
    if (!base_url_.empty()) (void)Call(protocol::kPathShutdown, nlohmann::json::object(), &ignored, 5);
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      if (i == 30) kill(pid_, SIGTERM);
      usleep(100 * 1000);
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  if (drain_.joinable()) drain_.join();
  if (out_fd_ >= 0) close(out_fd_), out_fd_ = -1;
}

namespace {
// `garble`: the reply's body replaced by bytes that are not JSON (the fault point learner.request:garbage).
Status Request(const std::string& url, const nlohmann::json& body, nlohmann::json* reply, double timeout_s,
               bool garble) {
  const bool get = body.is_null();
  agent::HttpReply r = agent::HttpRequest(get ? "GET" : "POST", url, get ? "" : body.dump(), {}, timeout_s, 10);
  if (garble && r.curl_error.empty()) r.body = "\x1f\x8b garbage {\"rows\": [";
  if (!r.curl_error.empty())
    return r.timed_out ? Status::Timeout(url + ": " + r.curl_error) : Status::Unavailable(url + ": " + r.curl_error);
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status != 200) {
    std::string msg = r.body.substr(0, 2000);
    if (!j.is_discarded() && j.contains("error") && j["error"].is_object()) msg = j["error"].value("message", msg);
    return r.status >= 500 ? Status::Internal(url + " failed: " + msg)
                           : Status::InvalidArgument(url + " refused the request: " + msg);
  }
  if (j.is_discarded()) return Status::Internal(url + " replied with something that is not JSON");
  *reply = std::move(j);
  return Status::Ok();
}
}  // namespace

Status CallJson(const std::string& url, const nlohmann::json& body, nlohmann::json* reply, double timeout_s) {
  return Request(url, body, reply, timeout_s, false);
}

Status LearnerProcess::Call(const std::string& path, const nlohmann::json& body, nlohmann::json* reply,
                            double timeout_s) const {
  if (base_url_.empty()) return Status::Unavailable("the learner is not running");
  // The fault point learner.request (fault/fault_points.h): the learner killed as the request goes out (kill), or a
  // reply that is not JSON (garbage).
  const auto fault = fault::Hit("learner.request");
  if (fault && fault->mode == "kill" && pid_ > 0) ::kill(pid_, SIGKILL);
  return Request(base_url_ + path, body, reply, timeout_s, fault && fault->mode == "garbage");
}

}  // namespace kgym::train
