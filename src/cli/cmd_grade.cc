// `kgym grade RUN_DIR`: Dr.Kernel / KernelBench metrics of an agent run; prints Markdown and writes
// grade.md, grade.json and grade.html (self-contained, SVG plots of Fast@p by turn).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "agent/run_dir.h"
#include "cli/command_registry.h"
#include "grade/metrics.h"
#include "grade/report.h"

namespace {

struct GradeArgs {
  std::string run, out, title;
  double solve_threshold = 0.99;
  bool quiet = false;
};

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary);
  o << text;
  return static_cast<bool>(o);
}

int RunGrade(const GradeArgs& a) {
  std::vector<nlohmann::json> recs;
  kgym::Status s = kgym::agent::LoadTrajectories(a.run, &recs);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym grade: %s\n", s.ToString().c_str());
    return 2;
  }
  kgym::grade::GradeOptions opt;
  opt.solve_threshold = a.solve_threshold;
  nlohmann::json g = kgym::grade::Grade(recs, opt);
  namespace fs = std::filesystem;
  std::string out = a.out;
  if (out.empty()) out = fs::is_directory(a.run) ? a.run : fs::path(a.run).parent_path().string();
  if (out.empty()) out = ".";
  fs::create_directories(out);
  std::string title = a.title.empty() ? "kgym grade: " + fs::path(a.run).filename().string() : a.title;
  g["source"] = a.run;
  const std::string md = kgym::grade::MarkdownReport(g, title);
  bool ok = WriteFile(out + "/grade.md", md) && WriteFile(out + "/grade.json", g.dump(2) + "\n") &&
            WriteFile(out + "/grade.html", kgym::grade::HtmlReport(g, title));
  if (!a.quiet) std::fputs(md.c_str(), stdout);
  if (!ok) {
    std::fprintf(stderr, "kgym grade: cannot write the reports into %s\n", out.c_str());
    return 1;
  }
  std::fprintf(stderr, "kgym grade: wrote %s/grade.{md,json,html}\n", out.c_str());
  return 0;
}

KGYM_REGISTER_COMMAND("grade", "grade an agent run (Fast@p by turn, best-of-history, pass@k, hacking ratio)",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto a = std::make_shared<GradeArgs>();
                        sub->add_option("run", a->run, "run directory or trajectories .jsonl")->required();
                        sub->add_option("--out", a->out, "where to write grade.{md,json,html} (default: the run)");
                        sub->add_option("--title", a->title, "report title");
                        sub->add_option("--solve-threshold", a->solve_threshold, "reward that counts as solved for pass@k")
                            ->capture_default_str();
                        sub->add_flag("--quiet", a->quiet, "do not print the Markdown");
                        return [a] { return RunGrade(*a); };
                      });

}  // namespace
