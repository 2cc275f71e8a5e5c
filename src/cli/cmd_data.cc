// `kgym data convert INPUT --out FILE.jsonl`: datasets (KernelBench folders, tasks/, JSONL, Dr.Kernel
// parquet) into kgym task JSONL, the format `kgym agent --tasks` reads fastest.
#include <cstdio>
#include <memory>

#include "agent/dataset_convert.h"
#include "cli/command_registry.h"

namespace {

struct DataArgs {
  std::string input, output;
  kgym::agent::ConvertOptions opt;
};

kgym::cli::CommandRunner SetupData(CLI::App* sub) {
  auto a = std::make_shared<DataArgs>();
  sub->require_subcommand(1);
  CLI::App* convert = sub->add_subcommand("convert", "convert a dataset into kgym task JSONL");
  convert->add_option("input", a->input, "KernelBench folder, tasks/ folder, .jsonl or Dr.Kernel .parquet")->required();
  convert->add_option("--out", a->output, "output .jsonl")->required();
  convert->add_option("--python", a->opt.python, "interpreter with pyarrow (parquet only)")->capture_default_str();
  convert->add_option("--level", a->opt.level, "set the level of every task");
  return [a, convert] {
    if (!convert->parsed()) return 2;
    int n = 0;
    kgym::Status s = kgym::agent::ConvertDataset(a->input, a->output, a->opt, &n);
    if (!s.ok()) {
      std::fprintf(stderr, "kgym data convert: %s\n", s.ToString().c_str());
      return 2;
    }
    std::fprintf(stderr, "kgym data convert: %d tasks -> %s\n", n, a->output.c_str());
    return 0;
  };
}

KGYM_REGISTER_COMMAND("data", "dataset tools (convert)", SetupData);

}  // namespace
