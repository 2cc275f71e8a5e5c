#include "server/http_server.h"

#include <sys/socket.h>

#include <chrono>

#include "server/http_routes.h"
#include "server/listen_socket.h"

namespace kgym {

namespace http {

void SendJson(httplib::Response& res, int code, const nlohmann::json& body) {
  res.status = code;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void SendDetail(httplib::Response& res, int code, const std::string& detail) {
  SendJson(res, code, {{"detail", detail}});
}

bool ParseBody(const httplib::Request& req, httplib::Response& res, nlohmann::json* out) {
  *out = nlohmann::json::parse(req.body, nullptr, false);
  if (out->is_discarded()) {
    res.set_header("X-Error-Code", "VALIDATION_ERROR");
    SendJson(res, 400, ValidationErrorBody("Request validation failed: the body is not valid JSON"));
    return false;
  }
  return true;
}

}  // namespace http

// cpp-httplib (Debian builds it as a shared library) listens with a backlog of 5. A burst of clients posting at once
// (Dr.Kernel's reward client keeps up to 64 requests in flight) then overflows the accept queue, and on Linux some
// of them are reset once they have sent their body; 64 concurrent POSTs to a briefly busy server lost up to 25. The
// backlog is raised after binding (listen() again on a listening socket updates it).
constexpr int kListenBacklog = 4096;

struct HttpServer::Impl {
  httplib::Server svr;
  http::Context ctx;
  int listen_fd = -1;  // the socket cpp-httplib bound (its socket-options hook sees it before bind)
};

HttpServer::HttpServer(EvaluationService* service, HttpOptions options) : impl_(new Impl) {
  impl_->ctx.service = service;
  impl_->ctx.options = std::move(options);
  impl_->ctx.started_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto& svr = impl_->svr;
  int threads = std::max(8, impl_->ctx.options.threads);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr.set_tcp_nodelay(true);  // headers and body go out as separate writes: no Nagle + delayed-ACK 40 ms stalls
  svr.set_keep_alive_max_count(100000);
  svr.set_keep_alive_timeout(30);
  svr.set_read_timeout(60);
  svr.set_write_timeout(60);
  svr.set_payload_max_length(64u << 20);
  std::string token = impl_->ctx.options.token;
  if (!token.empty()) {
    svr.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
      if (req.method == "GET" &&
          (req.path == "/" || req.path == "/health" || req.path == "/dashboard" || req.path.rfind("/assets/", 0) == 0))
        return httplib::Server::HandlerResponse::Unhandled;
      if (req.get_header_value("Authorization") == "Bearer " + token)
        return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("WWW-Authenticate", "Bearer");
      http::SendDetail(res, 401, "missing or wrong bearer token (send Authorization: Bearer <token>)");
      return httplib::Server::HandlerResponse::Handled;
    });
  }
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    res.set_header("X-Error-Code", "SYSTEM_ERROR");
    http::SendJson(res, 500, {{"error", "InternalServerError"}, {"message", msg}, {"error_code", "SYSTEM_ERROR"}});
  });
  // Routes nobody serves answer as FastAPI does (KernelGYM's framework): a JSON body, not an empty one.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404) http::SendDetail(res, 404, "Not Found");
    if (res.status == 405) http::SendDetail(res, 405, "Method Not Allowed");
    return httplib::Server::HandlerResponse::Handled;
  }));
  http::RegisterKernelGymRoutes(svr, &impl_->ctx);
  http::RegisterWorkflowRoutes(svr, &impl_->ctx);
  http::RegisterNativeRoutes(svr, &impl_->ctx);
  http::RegisterWorkerRoutes(svr, &impl_->ctx);
  http::RegisterDashboardRoutes(svr, &impl_->ctx);
}

HttpServer::~HttpServer() = default;

Status HttpServer::Bind() {
  auto& o = impl_->ctx.options;
  Status s = http::BindExclusive(impl_->svr, o.host, o.port, &port_,
                                 [impl = impl_.get()](socket_t sock) { impl->listen_fd = sock; });
  if (!s.ok()) return s;
  if (impl_->listen_fd < 0 || ::listen(impl_->listen_fd, kListenBacklog) != 0)
    return Status::IOError("cannot raise the listen backlog of " + o.host + ":" + std::to_string(port_));
  return Status::Ok();
}

void HttpServer::Serve() { impl_->svr.listen_after_bind(); }
void HttpServer::Stop() { impl_->svr.stop(); }

}  // namespace kgym
