// Flag names that more than one command has, outside the run parameters (src/run/run_params.h): one concept per
// name, defined here, so `--out` or `--gpus` mean the same thing in every command that has them. A command adds
// such a flag with AddSharedOption, whose help is the concept followed by what it is in that command.
// `kgym flags --json` lists every flag with its concept; tests/py/test_flag_names.py checks that a name used by
// several commands is always defined through one of the two tables.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace kgym::cli {

// The concept of a flag name shared by several commands ("" when the name is one command's own).
std::string FlagConcept(const std::string& name);

// `name` bound to `var`, its help "<concept>: <detail>" (just the concept without a detail).
template <class T>
CLI::Option* AddSharedOption(CLI::App* app, const std::string& name, T* var, const std::string& detail = "") {
  const std::string meaning = FlagConcept(name);
  const std::string help = detail.empty() ? meaning : meaning + ": " + detail;
  if constexpr (std::is_same_v<T, bool>)
    return app->add_flag(name, *var, help);
  else
    return app->add_option(name, *var, help);
}

}  // namespace kgym::cli
