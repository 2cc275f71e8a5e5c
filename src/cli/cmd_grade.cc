// `kgym grade RUN_DIR`: Dr.Kernel / KernelBench metrics of an agent run; prints Markdown and writes grade.md,
// grade.json and grade.html (the dashboard's run view as one self-contained page: Chart.js and the data inline,
// readable offline). `--report PATH` writes one more report, HTML or Markdown by its extension.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/command_registry.h"
#include "cli/shared_flags.h"
#include "grade/report.h"
#include "grade/run_folder.h"
#include "server/dashboard/dashboard.h"

namespace {

namespace fs = std::filesystem;

struct GradeArgs {
  std::string run, out, title;
  std::vector<std::string> reports;
  double solve_threshold = 0.99;
  bool quiet = false;
};

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary);
  o << text;
  return static_cast<bool>(o);
}

bool IsHtml(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  return ext == ".html" || ext == ".htm";
}

// The report data of a run folder (its own trajectories, else its latest val or rollout step) or of one
// trajectories .jsonl file.
kgym::Status ReportData(const GradeArgs& a, nlohmann::json* data) {
  kgym::grade::GradeOptions opt;
  opt.solve_threshold = a.solve_threshold;
  if (fs::is_directory(a.run)) {
    kgym::grade::RunFolder run;
    kgym::Status s = kgym::grade::OpenRunFolder(a.run, &run);
    return s.ok() ? kgym::grade::RunReportData(run, "", opt, data) : s;
  }
  std::vector<nlohmann::json> recs;
  std::vector<std::string> warnings;
  kgym::Status s = kgym::grade::ReadTrajectories(a.run, &recs, &warnings);
  if (!s.ok()) return s;
  *data = kgym::grade::TrajectoryReport(recs, opt);
  (*data)["metrics"] = nullptr;
  (*data)["run"] = {{"name", fs::path(a.run).filename().string()},
                    {"path", a.run},
                    {"kind", "agent"},
                    {"config", nlohmann::json::object()},
                    {"sources", {"trajectories"}},
                    {"source", "trajectories"},
                    {"warnings", warnings}};
  return kgym::Status::Ok();
}

int RunGrade(const GradeArgs& a) {
  nlohmann::json data;
  kgym::Status s = ReportData(a, &data);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym grade: %s\n", s.ToString().c_str());
    return 2;
  }
  for (const auto& w : data["run"]["warnings"])
    std::fprintf(stderr, "kgym grade: warning: %s\n", w.get<std::string>().c_str());
  std::string out = a.out;
  if (out.empty()) out = fs::is_directory(a.run) ? a.run : fs::path(a.run).parent_path().string();
  if (out.empty()) out = ".";
  fs::create_directories(out);
  std::string title =
      a.title.empty() ? "kgym grade: " + fs::path(a.run).lexically_normal().filename().string() : a.title;
  nlohmann::json g = data["grade"].is_object() ? data["grade"] : nlohmann::json::object();
  g["source"] = a.run;
  const std::string md = kgym::grade::MarkdownReport(data, title);
  const std::string html = kgym::dashboard::StandalonePage(data, title);
  bool ok = WriteFile(out + "/grade.md", md) && WriteFile(out + "/grade.json", g.dump(2) + "\n") &&
            WriteFile(out + "/grade.html", html);
  for (const auto& r : a.reports) ok = ok && WriteFile(r, IsHtml(r) ? html : md);
  if (!a.quiet) std::fputs(md.c_str(), stdout);
  if (!ok) {
    std::fprintf(stderr, "kgym grade: cannot write the reports into %s\n", out.c_str());
    return 1;
  }
  std::fprintf(stderr, "kgym grade: wrote %s/grade.{md,json,html}\n", out.c_str());
  for (const auto& r : a.reports) std::fprintf(stderr, "kgym grade: wrote %s\n", r.c_str());
  return 0;
}

KGYM_REGISTER_COMMAND("grade", "grade an agent run (Fast@p by turn, best-of-history, pass@k, hacking ratio)",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto a = std::make_shared<GradeArgs>();
                        sub->add_option("run", a->run, "run directory or trajectories .jsonl")->required();
                        kgym::cli::AddSharedOption(sub, "--out", &a->out,
                                                   "grade.{md,json,html}; default: the run folder");
                        sub->add_option("--report", a->reports,
                                        "also write a report here: .html/.htm = one self-contained page with plots, "
                                        "anything else = Markdown (repeatable)");
                        sub->add_option("--title", a->title, "report title");
                        sub->add_option("--solve-threshold", a->solve_threshold,
                                        "reward that counts as solved for pass@k")
                            ->capture_default_str();
                        sub->add_flag("--quiet", a->quiet, "do not print the Markdown");
                        return [a] { return RunGrade(*a); };
                      });

}  // namespace
