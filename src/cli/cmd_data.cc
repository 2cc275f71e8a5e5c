// `kgym data convert INPUT --out FILE.jsonl`: datasets (KernelBench folders, tasks/, JSONL, Dr.Kernel
// parquet) into kgym task JSONL, the format `kgym agent --tasks` reads fastest.
// `kgym data sft --tasks DIR --solutions DIR --out FILE.jsonl`: SFT conversations from tasks and their solutions
// (src/train/sft_data.h), what `kgym sft` trains on.
#include <cstdio>
#include <memory>

#include "agent/dataset_convert.h"
#include "cli/command_registry.h"
#include "cli/shared_flags.h"
#include "run/run_params.h"
#include "train/sft_data.h"

namespace {

struct DataArgs {
  std::string input, output;
  kgym::agent::ConvertOptions opt;
  kgym::train::SftDataOptions sft;
};

kgym::cli::CommandRunner SetupData(CLI::App* sub) {
  auto a = std::make_shared<DataArgs>();
  sub->require_subcommand(1);
  CLI::App* convert = sub->add_subcommand("convert", "convert a dataset into kgym task JSONL");
  convert->add_option("input", a->input, "KernelBench folder, tasks/ folder, .jsonl or Dr.Kernel .parquet")->required();
  kgym::cli::AddSharedOption(convert, "--out", &a->output, "task JSONL")->required();
  convert->add_option(
      "--python", a->opt.python,
      "interpreter for parquet (default: $KGYM_PYTHON, else /usr/bin/python3, with setup.sh's pyarrow)");
  convert->add_option("--task-level", a->opt.level, "set the level of every task");
  kgym::run::AddOldFlag(convert, "--level", "--task-level", &a->opt.level);
  CLI::App* sft = sub->add_subcommand("sft", "SFT conversations (drkernel-coldstart schema) from tasks and solutions");
  kgym::cli::AddSharedOption(sft, "--tasks", &a->sft.tasks, "a tasks folder")->required();
  sft->add_option("--solutions", a->sft.solutions, "folder of <task_id>_<kind>.py solutions")->required();
  kgym::cli::AddSharedOption(sft, "--kinds", &a->sft.kinds, "one conversation each, e.g. triton,lazy")
      ->delimiter(',')
      ->capture_default_str();
  kgym::cli::AddSharedOption(sft, "--only", &a->sft.only, "comma-separated")->delimiter(',');
  sft->add_option("--repeat", a->sft.repeat, "write each conversation this many times")->capture_default_str();
  kgym::cli::AddSharedOption(sft, "--templates", &a->sft.templates);
  kgym::cli::AddSharedOption(sft, "--out", &a->output, "conversations JSONL")->required();
  return [a, convert, sft] {
    if (sft->parsed()) {
      int n = 0, tasks = 0;
      kgym::Status s = kgym::train::WriteSftData(a->sft, a->output, &n, &tasks);
      if (!s.ok()) {
        std::fprintf(stderr, "kgym data sft: %s\n", s.ToString().c_str());
        return 2;
      }
      std::fprintf(stderr, "kgym data sft: %d conversations over %d tasks -> %s\n", n, tasks, a->output.c_str());
      return 0;
    }
    if (!convert->parsed()) return 2;
    kgym::agent::ConvertReport report;
    kgym::Status s = kgym::agent::ConvertDataset(a->input, a->output, a->opt, &report);
    for (const auto& note : report.notes) std::fprintf(stderr, "kgym data convert: %s\n", note.c_str());
    if (!s.ok()) {
      std::fprintf(stderr, "kgym data convert: %s\n", s.ToString().c_str());
      return 2;
    }
    std::fprintf(
        stderr, "kgym data convert: %d tasks -> %s%s\n", report.written, a->output.c_str(),
        report.notes.empty() ? "" : (" (" + std::to_string(report.notes.size()) + " repeated ids, above)").c_str());
    return 0;
  };
}

KGYM_REGISTER_COMMAND("data", "dataset tools (convert, sft)", SetupData);

}  // namespace
