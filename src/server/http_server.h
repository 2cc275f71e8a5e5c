// HttpServer: the HTTP face of an EvaluationService. Speaks KernelGYM's API as KernelGYM does (POST /evaluate,
// /evaluate/batch, /workflow/*, /status, /results, DELETE /tasks, with its statuses, error codes, schemas and error
// bodies: core/kernelgym_schema.h, research/kernelgym.md §1) and kgym's native API under /v1 (asynchronous
// submission, long-poll, server-sent progress events, kgym's full results, Prometheus metrics).
//
// One thread per open connection from a fixed pool (cpp-httplib); size `threads` for the number of clients
// that block in POST /evaluate at once (the Dr.Kernel client keeps up to 128 connections). When `token` is
// set every route except GET / and GET /health (and the dashboard's page and files: GET /dashboard, GET /assets/*;
// the page sends the token with its API calls) requires "Authorization: Bearer <token>".
//
// A browser that opens GET / gets the dashboard (server/dashboard/dashboard.h); API clients get KernelGYM's JSON.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/evaluation_service.h"

namespace kgym {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 10907;  // 0 = any free port (see port())
  int threads = 512;
  bool compat = false;  // --mode compat: no request may opt in to kgym's result on KernelGYM's routes
  std::string token;
  double max_wait_s = 3600;            // longest a blocking POST /evaluate waits before answering 504
  std::vector<std::string> run_roots;  // run folders shown by the dashboard (--runs); none = no run pages
};

class HttpServer {
 public:
  HttpServer(EvaluationService* service, HttpOptions options);
  ~HttpServer();
  // Binds the socket; after this port() is the bound port.
  Status Bind();
  // Serves until Stop(); blocks.
  void Serve();
  void Stop();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace kgym
