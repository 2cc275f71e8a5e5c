// Test helper: a private redis-server child on a free loopback port, killed when the object dies.
// Used only by tests; Available() is false (and tests skip) when redis-server is not installed.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "store/redis_queue.h"

namespace kgym {

class RedisTestServer {
 public:
  RedisTestServer() {
    const char* bin = "/usr/bin/redis-server";
    if (access(bin, X_OK) != 0) return;
    port_ = FreePort();
    std::string port = std::to_string(port_);
    pid_ = fork();
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execl(bin, bin, "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize",
            "no", "--loglevel", "warning", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100; ++i) {
      std::unique_ptr<RedisJobQueue> q;
      if (RedisJobQueue::Connect(Url(), "probe", &q).ok()) {
        ready_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~RedisTestServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool Available() const { return ready_; }
  std::string Url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }

  static int FreePort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  bool ready_ = false;
};

}  // namespace kgym
