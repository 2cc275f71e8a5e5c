// `kgym eval`: evaluates one candidate against one reference and prints the result as one JSON object.
// Exit 0 whenever the evaluation ran (whatever the verdict); 2 for usage errors; 1 for infrastructure errors.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/command_registry.h"
#include "cli/evaluator_flags.h"
#include "cli/shared_flags.h"
#include "eval/evaluator.h"
#include "run/run_params.h"

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

bool GpuVisible() { return ::access("/dev/nvidia0", F_OK) == 0 || ::access("/dev/nvidiactl", F_OK) == 0; }

struct EvalFlags {
  std::string ref, kernel, device, backend = "triton", size, reference_backend, task_id = "cli", precision = "strict";
  double coverage_floor = 0.1;
  int correct_trials = 5, perf_trials = 100, warmup = 3, device_index = 0, min_perf_trials = 20;
  double timeout = 300, atol = 1e-2, rtol = 1e-2, memory_gb = 0, perf_ci = 0.005;
  bool train = false, unsafe = false, compat = false, no_perf = false, pretty = false;
};

KGYM_REGISTER_COMMAND(
    "eval", "evaluate one candidate (ModelNew) against one reference (Model)",
    [](CLI::App* sub) -> kgym::cli::CommandRunner {
      auto f = std::make_shared<EvalFlags>();
      sub->add_option("--ref", f->ref, "reference file (class Model, get_inputs, get_init_inputs)")->required();
      sub->add_option("--kernel", f->kernel, "candidate file (class ModelNew)")->required();
      using kgym::cli::AddSharedOption;
      AddSharedOption(sub, "--device", &f->device, "default: cuda when a GPU is visible")
          ->check(CLI::IsMember({"cpu", "cuda"}));
      AddSharedOption(sub, "--gpus", &f->device_index, "one GPU index, with --device cuda");
      AddSharedOption(sub, "--backend", &f->backend)->check(CLI::IsMember({"triton", "cuda"}));
      AddSharedOption(sub, "--num-correct-trials", &f->correct_trials)->check(CLI::Range(1, 100));
      AddSharedOption(sub, "--num-perf-trials", &f->perf_trials)->check(CLI::Range(1, 10000));
      kgym::cli::AddMinPerfTrialsFlag(sub, &f->min_perf_trials);
      sub->add_option(
             "--perf-ci", f->perf_ci,
             "adaptive trials: stop once both ends of the median's 95% interval are within this fraction of it")
          ->check(CLI::Range(0.0001, 1.0))
          ->capture_default_str();
      sub->add_option("--warmup", f->warmup, "untimed warmup calls")->check(CLI::Range(0, 1000));
      AddSharedOption(sub, "--eval-timeout", &f->timeout)->check(CLI::Range(1.0, 86400.0));
      sub->add_option("--atol", f->atol, "absolute tolerance (fp32)");
      sub->add_option("--rtol", f->rtol, "relative tolerance (fp32)");
      kgym::cli::AddPrecisionFlag(sub, &f->precision);
      sub->add_option("--memory-limit-gb", f->memory_gb, "host memory limit of the candidate");
      AddSharedOption(sub, "--size", &f->size);
      AddSharedOption(sub, "--reference-backend", &f->reference_backend);
      sub->add_option("--coverage-floor", f->coverage_floor, "GPU time coverage below this is reported (0 disables)")
          ->check(CLI::Range(0.0, 1.0));
      sub->add_option("--task-id", f->task_id, "task id echoed in the result");
      sub->add_flag("--train-mode", f->train, "keep models in training mode");
      sub->add_flag("--no-perf", f->no_perf, "skip timing");
      AddSharedOption(sub, "--compat", &f->compat);
      sub->add_flag("--pretty", f->pretty, "indent the JSON");
      AddSharedOption(sub, "--unsafe-no-sandbox", &f->unsafe);
      // Old names (issue 35: one name per concept across commands).
      kgym::run::AddOldFlag(sub, "--gpu", "--gpus", &f->device_index);
      kgym::run::AddOldFlag(sub, "--correct-trials", "--num-correct-trials", &f->correct_trials);
      kgym::run::AddOldFlag(sub, "--perf-trials", "--num-perf-trials", &f->perf_trials);
      kgym::run::AddOldFlag(sub, "--timeout", "--eval-timeout", &f->timeout);
      return [f]() -> int {
        kgym::EvalRequest req;
        if (!ReadFile(f->ref, &req.reference_code)) {
          std::cerr << "kgym eval: cannot read --ref " << f->ref << "\n";
          return 2;
        }
        if (!ReadFile(f->kernel, &req.kernel_code)) {
          std::cerr << "kgym eval: cannot read --kernel " << f->kernel << "\n";
          return 2;
        }
        req.device = f->device;
        if (req.device.empty()) {
          req.device = GpuVisible() ? "cuda" : "cpu";
          if (req.device == "cpu") std::cerr << "kgym eval: no GPU visible, evaluating on the CPU\n";
        }
        req.task_id = f->task_id;
        req.device_index = f->device_index;
        req.backend = f->backend;
        req.num_correct_trials = f->correct_trials;
        req.num_perf_trials = f->perf_trials;
        req.min_perf_trials = f->min_perf_trials;
        req.perf_ci_target = f->perf_ci;
        req.precision = f->precision;
        req.num_warmup = f->warmup;
        req.timeout_s = f->timeout;
        req.atol = f->atol;
        req.rtol = f->rtol;
        req.memory_limit_gb = f->memory_gb;
        req.size = f->size;
        req.reference_backend = f->reference_backend;
        req.coverage_floor = f->coverage_floor;
        req.train_mode = f->train;
        req.measure_performance = !f->no_perf;
        req.unsafe_no_sandbox = f->unsafe;
        kgym::EvaluatorOptions opt;
        opt.sandbox = !f->unsafe;
        opt.spare_workers = 0;  // one evaluation: a spare would only cost time
        std::unique_ptr<kgym::Evaluator> ev;
        kgym::Status s = kgym::Evaluator::Create(opt, &ev);
        if (!s.ok()) {
          std::cerr << "kgym eval: " << s.ToString() << "\n";
          return 1;
        }
        kgym::EvalResult r = ev->Evaluate(req);
        if (r.error_code == "SYSTEM_ERROR") {
          std::cerr << "kgym eval: " << r.outcome_detail << "\n";
          std::cout << r.ToJson(f->compat).dump(f->pretty ? 2 : -1) << std::endl;
          return 1;
        }
        std::cout << r.ToJson(f->compat).dump(f->pretty ? 2 : -1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << std::endl;
        return 0;
      };
    });

}  // namespace
