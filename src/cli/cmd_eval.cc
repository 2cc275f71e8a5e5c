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
#include "request/request_fields.h"
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
  kgym::EvalRequest req;  // what the request asks: its fields' flags are the request table's (request_fields.h)
  std::string ref, kernel, device;
  bool unsafe = false, compat = false, no_perf = false, pretty = false;
  EvalFlags() {  // `kgym eval`'s own defaults where they name what the evaluator would otherwise choose
    req.task_id = "cli";
    req.precision = "strict";
    req.min_perf_trials = 20;
  }
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
      AddSharedOption(sub, "--gpus", &f->req.device_index, "one GPU index, with --device cuda");
      for (const kgym::request::RequestField& field : kgym::request::RequestFields())
        if (*field.flag) kgym::request::AddRequestFlag(sub, field, field.slot(&f->req));
      sub->add_flag("--no-perf", f->no_perf, "skip timing");
      AddSharedOption(sub, "--compat", &f->compat);
      sub->add_flag("--pretty", f->pretty, "indent the JSON");
      AddSharedOption(sub, "--unsafe-no-sandbox", &f->unsafe);
      // Old names (issue 35: one name per concept across commands).
      kgym::run::AddOldFlag(sub, "--gpu", "--gpus", &f->req.device_index);
      kgym::run::AddOldRequestFlag(sub, "--correct-trials", "--num-correct-trials", &f->req);
      kgym::run::AddOldRequestFlag(sub, "--perf-trials", "--num-perf-trials", &f->req);
      kgym::run::AddOldRequestFlag(sub, "--timeout", "--eval-timeout", &f->req);
      return [f]() -> int {
        kgym::EvalRequest req = f->req;
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
