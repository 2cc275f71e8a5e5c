#include "server/listen_socket.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace kgym::http {

void ExclusiveSocketOptions(socket_t sock) {
  int yes = 1, no = 0;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
#ifdef SO_REUSEPORT
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEPORT, &no, sizeof no);
#endif
}

Status BindExclusive(httplib::Server& svr, const std::string& host, int port, int* bound,
                     std::function<void(socket_t)> on_socket) {
  svr.set_socket_options([on_socket](socket_t sock) {
    ExclusiveSocketOptions(sock);
    if (on_socket) on_socket(sock);
  });
  errno = 0;
  const int got = port == 0 ? svr.bind_to_any_port(host) : (svr.bind_to_port(host, port) ? port : -1);
  const int bind_errno = errno;
  if (got > 0) {
    *bound = got;
    return Status::Ok();
  }
  const std::string where = host + ":" + std::to_string(port);
  if (bind_errno == EADDRINUSE)
    return Status::Unavailable("port " + where +
                               " is in use by another process (another kgym serve?); stop it or "
                               "choose another --port (--port 0 picks a free one)");
  return Status::IOError("cannot listen on " + where +
                         (bind_errno ? ": " + std::string(std::strerror(bind_errno)) : "") +
                         " (--host must be an address of this machine; --port 0 picks a free port)");
}

}  // namespace kgym::http
