// One listener per port. cpp-httplib's default socket options set SO_REUSEPORT, with which a second `kgym serve`
// on a port already in use binds, says "listening" and shares the port with the first: clients' connections then
// split between two servers with two stores. BindExclusive binds with SO_REUSEADDR only (a restarted server still
// binds past connections in TIME_WAIT) and SO_REUSEPORT off, so a port held by another listener is refused.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>

#include "core/status.h"

namespace kgym::http {

// The socket options of every listener kgym opens: SO_REUSEADDR on, SO_REUSEPORT off.
void ExclusiveSocketOptions(socket_t sock);

// Binds `svr` to host:port (port 0 = any free port) with ExclusiveSocketOptions; `on_socket` (may be empty) also
// sees the listening socket. On success *bound is the port. A port in use is an error naming the port and the fix.
Status BindExclusive(httplib::Server& svr, const std::string& host, int port, int* bound,
                     std::function<void(socket_t)> on_socket = {});

}  // namespace kgym::http
