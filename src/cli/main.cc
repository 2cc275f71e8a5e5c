// The `kgym` command: a thin shell over the library; each subcommand lives in its own cmd_*.cc.
#include <algorithm>
#include <cstdio>
#include <map>

#include "cli/command_registry.h"
#include "fault/fault_points.h"

namespace kgym::cli {
std::vector<CommandSpec>& Commands() {
  static std::vector<CommandSpec> commands;
  return commands;
}
}  // namespace kgym::cli

int main(int argc, char** argv) {
  // Tests arm fault points through KGYM_FAULTS (fault/fault_points.h); a spec that names no known point is refused
  // here, before anything runs, rather than never firing.
  if (!kgym::fault::ArmFromEnvironment().empty()) return 2;
  CLI::App app{"kgym: evaluate, train and grade LLM-written GPU kernels"};
  app.require_subcommand(1);
  auto& specs = kgym::cli::Commands();
  std::sort(specs.begin(), specs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::map<CLI::App*, kgym::cli::CommandRunner> runners;
  for (auto& spec : specs) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    runners[sub] = spec.setup(sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, run] : runners)
    if (sub->parsed()) return run();
  return 2;
}
