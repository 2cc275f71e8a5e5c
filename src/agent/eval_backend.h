// EvalBackend: where the agent sends a candidate for evaluation. Two implementations: the in-process
// kgym::Evaluator (no --server) and a KernelGYM-compatible HTTP server (--server URL), spoken to exactly like
// the Dr.Kernel reward client does (research/kernelgym.md §1.10): POST /evaluate with its payload, then
// GET /results/{task_id}; retries on 429/5xx/timeouts reuse the same task_id (the server is idempotent by id).
//
// Thread-safe: Evaluate() is called from many trajectory threads at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/evaluation.h"
#include "core/status.h"

namespace kgym::agent {

class EvalBackend {
 public:
  virtual ~EvalBackend() = default;
  // On success `*result` is the evaluation result in the KernelGYM schema (EvalResult::ToJson plus whatever
  // the server adds). A non-ok Status means no verdict was reached (server unreachable, system error).
  virtual Status Evaluate(const EvalRequest& req, nlohmann::json* result) = 0;
  virtual std::string Describe() const = 0;
};

struct HttpGymOptions {
  std::string base_url;            // e.g. http://127.0.0.1:10907
  double client_timeout_s = 2400;  // per HTTP call; forced >= request timeout + 60
  int max_retries = 3;
  // A POST that fails in passing (no answer, 429, 5xx) is sent again for at least this long (kgym train: a gym that
  // restarts answers again within seconds); 0 = max_retries alone.
  double retry_window_s = 0;
  double backoff_base_s = 1.0;
  double backoff_max_s = 30.0;
  bool is_valid = true;  // Dr.Kernel sets is_valid for evaluation (forces decoy detection)
};

std::unique_ptr<EvalBackend> MakeHttpGymBackend(const HttpGymOptions& options);

// The POST /evaluate body the Dr.Kernel reward client sends for `req`.
nlohmann::json GymPayload(const EvalRequest& req, bool is_valid);

// Creates the in-process backend over kgym::Evaluator (compat = KernelGYM status semantics in the result).
Status MakeInProcessBackend(bool unsafe_no_sandbox, bool compat, std::unique_ptr<EvalBackend>* out);

}  // namespace kgym::agent
