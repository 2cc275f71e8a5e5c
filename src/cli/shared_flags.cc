#include "cli/shared_flags.h"

#include <map>

#include "run/run_params.h"

namespace kgym::cli {

std::string FlagConcept(const std::string& name) {
  static const std::map<std::string, std::string> kConcepts = {
      {"--out", "where the output goes"},
      {"--tasks", "the task set"},
      {"--only", "task ids (or name substrings) to keep"},
      {"--kinds", "solution kinds"},
      {"--json", "print JSON"},
      {"--host", "address to bind (default loopback only)"},
      {"--port", "port to listen on (0 = any free port)"},
      {"--gpus", "the GPUs evaluations run on"},
      {"--redis", "the Redis queue, redis://HOST:PORT/DB"},
      {"--redis-prefix", "Redis key prefix"},
      {"--slots-per-gpu", "evaluations in flight per GPU (timing stays exclusive)"},
      {"--cpu-slots", "evaluations in flight on the CPU device"},
      {"--max-retries", "retries of a failed attempt"},
      {"--retry-backoff", "first retry delay in seconds (doubles per retry)"},
      {"--drain-timeout", "seconds a SIGTERM lets running evaluations finish (a second signal stops them at once)"},
      {"--seed", "base random seed"},
      {"--level", "the level the rejection sampling works at"},
  };
  if (auto it = kConcepts.find(name); it != kConcepts.end()) return it->second;
  if (const run::RunParam* p = run::FindRunParam(name)) return p->help;
  if (const request::RequestField* f = request::FindRequestFlag(name)) return f->help;
  return "";
}

}  // namespace kgym::cli
