// bench/eval_overhead: what one evaluation costs beyond the work of the kernels themselves.
//
// kgym: one Evaluator (warm zygote, reference cached after the first evaluation) evaluates a tiny task N times;
// every evaluation forks a fresh sandboxed worker. Baseline: a fresh Python process per evaluation that imports
// torch and runs the same correctness trials and timed calls in-process (KernelBench's batch protocol).
// The tiny task makes the kernels' own time negligible, so the wall time per evaluation is the overhead.
// Prints one table and writes the raw numbers as JSON (--out).
#include <sys/utsname.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "core/runtime_files.h"
#include "eval/evaluator.h"
#include "sandbox/zygote.h"

namespace {
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}
std::string Slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
std::string Run(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"per-evaluation overhead: kgym (fork from zygote) vs a fresh Python process per evaluation"};
  std::string device = "cpu", ref, kernel, out, src_dir = KGYM_SOURCE_DIR;
  int n = 20, baseline_n = 5;
  app.add_option("--device", device)->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--ref", ref, "reference file (default: bench/eval_overhead/tiny_ref.py)");
  app.add_option("--kernel", kernel, "candidate file (default: bench/eval_overhead/tiny_kernel.py)");
  app.add_option("-n", n, "kgym evaluations");
  app.add_option("--baseline-n", baseline_n, "fresh-process evaluations");
  app.add_option("--out", out, "raw results JSON");
  CLI11_PARSE(app, argc, argv);
  if (ref.empty()) ref = src_dir + "/bench/eval_overhead/tiny_ref.py";
  if (kernel.empty()) kernel = src_dir + "/bench/eval_overhead/tiny_kernel.py";
  using Clock = std::chrono::steady_clock;

  auto t0 = Clock::now();
  std::unique_ptr<kgym::Evaluator> ev;
  kgym::Status s = kgym::Evaluator::Create({}, &ev);
  if (!s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 1;
  }
  double zygote_s = std::chrono::duration<double>(Clock::now() - t0).count();
  kgym::EvalRequest req;
  req.reference_code = Slurp(ref);
  req.kernel_code = Slurp(kernel);
  req.device = device;
  req.num_perf_trials = 10;
  req.num_warmup = 1;
  std::vector<double> kgym_s, work_ms;
  std::map<std::string, std::vector<double>> parts;  // metadata.phase_s and the timeline's pieces, per evaluation
  std::string outcome;
  for (int i = 0; i < n + 1; ++i) {
    auto a = Clock::now();
    kgym::EvalResult r = ev->Evaluate(req);
    double sec = std::chrono::duration<double>(Clock::now() - a).count();
    outcome = kgym::OutcomeName(r.outcome);
    if (i == 0) continue;  // the first one also computes and times the reference
    kgym_s.push_back(sec);
    double w = 0;
    if (r.kernel_timing) w = r.kernel_timing->mean * (r.kernel_timing->n + 1 + 6);
    work_ms.push_back(w);
    if (r.metadata.contains("phase_s"))
      for (auto& [k, v] : r.metadata["phase_s"].items()) parts[k].push_back(v.get<double>());
    for (const char* k : {"timeline_fetch_s", "detect_grad_s"})
      if (r.metadata.contains(k)) parts[k].push_back(r.metadata[k].get<double>());
  }
  std::vector<double> base_s;
  std::string py = kgym::PythonInterpreter();
  for (int i = 0; i < baseline_n; ++i) {
    auto a = Clock::now();
    std::string cmd = py + " " + src_dir + "/bench/eval_overhead/fresh_process_eval.py --device " + device + " " + ref +
                      " " + kernel + " 2>&1";
    std::string o = Run(cmd);
    base_s.push_back(std::chrono::duration<double>(Clock::now() - a).count());
    if (o.find("correct") == std::string::npos) std::cerr << "baseline run said: " << o << "\n";
  }
  double km = Median(kgym_s), bm = Median(base_s), wm = Median(work_ms) / 1000.0;
  std::printf("| measure (device %s) | median s/eval | n |\n|---|---|---|\n", device.c_str());
  std::printf("| kgym, fork from warm zygote (outcome %s) | %.3f | %zu |\n", outcome.c_str(), km, kgym_s.size());
  std::printf("| kgym overhead beyond kernel work | %.3f | |\n", km - wm);
  std::printf("| fresh Python process per evaluation | %.3f | %zu |\n", bm, base_s.size());
  std::printf("| zygote start (once) | %.3f | 1 |\n", zygote_s);
  nlohmann::json part_medians = nlohmann::json::object();
  for (auto& [k, v] : parts) {
    part_medians[k] = Median(v);
    std::printf("| of which %s | %.4f | %zu |\n", k.c_str(), Median(v), v.size());
  }
  if (!out.empty()) {
    utsname u{};
    uname(&u);
    nlohmann::json j = {{"benchmark", "eval_overhead"},
                        {"command",
                         [&] {
                           std::string c;
                           for (int i = 0; i < argc; ++i) c += std::string(i ? " " : "") + argv[i];
                           return c;
                         }()},
                        // KGYM_BENCH_COMMIT: the tree's commit where the copy has no (or a stale) .git (GPU runs)
                        {"commit",
                         [&] {
                           const char* c = std::getenv("KGYM_BENCH_COMMIT");
                           return c ? std::string(c) : Run("git -C " + src_dir + " rev-parse --short HEAD 2>/dev/null");
                         }()},
                        {"date", Run("date -u +%Y-%m-%dT%H:%M:%SZ")},
                        {"machine",
                         {{"uname", std::string(u.sysname) + " " + u.release + " " + u.machine},
                          {"cpu", Run("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")},
                          {"cores", Run("nproc")},
                          {"gpu", Run("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1")}}},
                        {"device", device},
                        {"kgym_eval_s", kgym_s},
                        {"kgym_kernel_work_ms_estimate", work_ms},
                        {"kgym_part_median_s", part_medians},
                        {"fresh_process_eval_s", base_s},
                        {"zygote_start_s", zygote_s},
                        {"kgym_median_s", km},
                        {"kgym_overhead_median_s", km - wm},
                        {"fresh_process_median_s", bm}};
    std::ofstream(out) << j.dump(2) << "\n";
  }
  return 0;
}
