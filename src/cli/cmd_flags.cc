// `kgym flags [--json]`: every flag of every command with its meaning; old names are marked with the name that
// replaced them. One name has one meaning across commands (cli/shared_flags.h, run/run_params.h);
// tests/py/test_flag_names.py checks it on this listing. `kgym flags --request-fields`: the evaluation request's
// field table (request/request_fields.h), which tests/py/test_request_fields.py walks.
#include <cstdio>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/shared_flags.h"
#include "request/request_fields.h"

namespace {

void Walk(const CLI::App* app, const std::string& path, nlohmann::json* out) {
  for (const CLI::Option* o : app->get_options()) {
    const std::vector<std::string>& longs = o->get_lnames();
    if (longs.empty() || longs[0] == "help" || longs[0] == "help-all") continue;
    const std::string name = "--" + longs[0];
    const std::string desc = o->get_description();
    const bool old = o->get_group().empty();
    nlohmann::json e = {
        {"command", path}, {"name", name}, {"description", desc}, {"concept", kgym::cli::FlagConcept(name)}};
    if (old) e["old_name_of"] = desc.rfind("old name of ", 0) == 0 ? desc.substr(12) : desc;
    out->push_back(std::move(e));
  }
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    Walk(sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

KGYM_REGISTER_COMMAND("flags", "list every flag of every command with its meaning (old names marked)",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto json = std::make_shared<bool>(false);
                        auto fields = std::make_shared<bool>(false);
                        kgym::cli::AddSharedOption(sub, "--json", json.get(), "one object per flag");
                        sub->add_flag("--request-fields", *fields,
                                      "the evaluation request's fields instead (request/request_fields.h): HTTP name, "
                                      "flag, YAML keys, type, default, limits, meaning; JSON");
                        return [sub, json, fields] {
                          if (*fields) {
                            std::cout << kgym::request::TableJson().dump(1) << "\n";
                            return 0;
                          }
                          nlohmann::json all = nlohmann::json::array();
                          Walk(sub->get_parent(), "", &all);
                          if (*json) {
                            std::cout << all.dump(1) << "\n";
                            return 0;
                          }
                          for (const auto& e : all) {
                            std::string line =
                                "kgym " + e["command"].get<std::string>() + " " + e["name"].get<std::string>() + "\t";
                            line += e.contains("old_name_of")
                                        ? "(old name of " + e["old_name_of"].get<std::string>() + ")"
                                        : e["description"].get<std::string>();
                            std::printf("%s\n", line.c_str());
                          }
                          return 0;
                        };
                      });

}  // namespace
