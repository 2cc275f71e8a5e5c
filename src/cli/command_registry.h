// Subcommands of the `kgym` binary register themselves here, one file each (cmd_<name>.cc), so modules can add
// commands without touching main.cc. A registrar adds its options to the CLI11 subcommand and returns the
// function that runs it; that function's return value is the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace kgym::cli {

using CommandRunner = std::function<int()>;
using CommandSetup = std::function<CommandRunner(CLI::App* sub)>;

struct CommandSpec {
  std::string name;
  std::string description;
  CommandSetup setup;
};

std::vector<CommandSpec>& Commands();

struct CommandRegistrar {
  CommandRegistrar(std::string name, std::string description, CommandSetup setup) {
    Commands().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace kgym::cli

#define KGYM_CONCAT_INNER(a, b) a##b
#define KGYM_CONCAT(a, b) KGYM_CONCAT_INNER(a, b)
// Variadic so a setup lambda with unparenthesised commas (captures, template arguments) passes through whole.
#define KGYM_REGISTER_COMMAND(name, description, ...) \
  static ::kgym::cli::CommandRegistrar KGYM_CONCAT(kgym_command_, __LINE__)(name, description, __VA_ARGS__)
