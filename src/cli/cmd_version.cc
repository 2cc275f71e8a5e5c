// `kgym version`: prints the version.
#include <cstdio>

#include "cli/command_registry.h"

namespace {
KGYM_REGISTER_COMMAND("version", "print the kgym version", [](CLI::App*) -> kgym::cli::CommandRunner {
  return [] {
    std::puts("kgym 0.1.0");
    return 0;
  };
});
}  // namespace
