// The evaluator's flags, shared by the commands that run jobs (`kgym serve`, `kgym worker`): one definition, so the
// two commands cannot drift apart (server/evaluator_factory.h builds the evaluator from them).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/shared_flags.h"
#include "server/evaluator_factory.h"

namespace kgym::cli {

// Host memory (GB) the evaluations in flight may hold (sched/admission.h); also `kgym suite`'s.
inline void AddMemBudgetFlag(CLI::App* sub, double* gb) {
  sub->add_option(
      "--mem-budget", *gb,
      "host memory (GB) the evaluations in flight may hold; default 70% of what is available, 0 = no limit");
}

// How results are judged and timed, for the commands that evaluate (`kgym eval` sets the request's own; `kgym serve`
// and `kgym worker` the default of requests that name none).
inline void AddPrecisionFlag(CLI::App* sub, std::string* precision) {
  sub->add_option("--precision", *precision,
                  "strict: outputs past the fp32 error budget against an fp64 oracle are a precision downgrade "
                  "(hacked); compat: KernelGYM's allclose alone, the precision class reported")
      ->check(CLI::IsMember({"strict", "compat"}))
      ->capture_default_str();
}
inline void AddMinPerfTrialsFlag(CLI::App* sub, int* n) {
  sub->add_option("--min-perf-trials", *n,
                  "adaptive trials: timed calls stop once the median's 95% interval is within 0.5%, after at least "
                  "this many (the perf-trial count is the most); 0 = always the perf-trial count")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
}

inline void AddEvaluatorFlags(CLI::App* sub, EvaluatorChoice* c) {
  sub->add_option("--evaluator", c->kind, "real, or simulated (serving-path benchmarks only)")
      ->check(CLI::IsMember({"real", "simulated"}));
  sub->add_option("--sim-sleep", c->sim_sleep_s, "simulated evaluation time in seconds");
  sub->add_option("--sim-journal", c->sim_journal, "simulated evaluator: append start/end lines here");
  AddSharedOption(sub, "--unsafe-no-sandbox", &c->unsafe_no_sandbox);
  AddMemBudgetFlag(sub, &c->mem_budget_gb);
  sub->add_option("--spare-workers", c->spare_workers,
                  "candidate workers per sandbox policy kept started ahead of need (0 = none; default: 4 for a GPU, "
                  "1 for the CPU)")
      ->check(CLI::Range(0, 64));
  sub->add_option("--lent-buffers", c->lent_buffers,
                  "output buffers lent to each candidate's worker for outputs of 1 MiB or more (0 = none: the worker "
                  "makes a memfd per reply)")
      ->check(CLI::Range(0, 8));
  sub->add_flag("--quiet-timing", c->quiet_timing,
                "other evaluations' device work (loads, correctness trials, fetches) starts only between timed holds");
  AddPrecisionFlag(sub, &c->precision);
  AddMinPerfTrialsFlag(sub, &c->min_perf_trials);
  sub->add_flag("--no-freeze-neighbours", c->no_freeze_neighbours,
                "leave the device's other workers running during a timed hold (by default they are frozen: cgroup "
                "freezer or SIGSTOP; KGYM_FREEZER=signals forces signals)");
}

}  // namespace kgym::cli
