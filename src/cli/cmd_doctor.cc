// `kgym doctor`: which protections the sandbox gets on this machine, and why any is missing; which Python and which
// runtime files kgym uses (core/runtime_files.h).
#include <iostream>

#include "cli/command_registry.h"
#include "cli/shared_flags.h"
#include "core/runtime_files.h"
#include "eval/evaluator.h"

namespace {
KGYM_REGISTER_COMMAND("doctor", "show which sandbox protections are active here and why any is missing",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto json = std::make_shared<bool>(false);
                        kgym::cli::AddSharedOption(sub, "--json", json.get(), "the report");
                        return [json]() -> int {
                          std::unique_ptr<kgym::Evaluator> ev;
                          kgym::Status s = kgym::Evaluator::Create({}, &ev);
                          if (!s.ok()) {
                            std::cerr << "kgym doctor: " << s.ToString() << "\n";
                            return 1;
                          }
                          auto d = ev->Doctor();
                          d["runtime"] = {{"python", kgym::PythonInterpreter()},
                                          {"kgym_harness", kgym::PythonPackageDir("kgym_harness")},
                                          {"kgym_train", kgym::PythonPackageDir("kgym_train")},
                                          {"learner_packages", kgym::LearnerPackagesDir()}};
                          if (*json) {
                            std::cout << d.dump(2) << std::endl;
                            return d.contains("error") ? 1 : 0;
                          }
                          const auto& py = d["python"];
                          std::cout << "python " << py.value("python", "?")
                                    << ", preloaded: " << py.value("modules", nlohmann::json::array()).dump() << " in "
                                    << py.value("import_s", 0.0) << " s\n";
                          for (auto& [k, v] : d["runtime"].items()) std::cout << "runtime " << k << ": " << v << "\n";
                          if (d.contains("error")) {
                            std::cout << "probe worker failed: " << d["error"].get<std::string>() << "\n";
                            return 1;
                          }
                          std::cout << "devices: " << d["devices"].dump() << "\nfreezer: " << d.value("freezer", "off")
                                    << " (how a timed hold stops the device's other workers)\nprotections:\n";
                          for (auto& [k, v] : d["protections"].items())
                            std::cout << "  " << k << ": " << v.dump() << "\n";
                          if (d["missing"].empty()) {
                            std::cout << "sealed: every required protection is active\n";
                          } else {
                            std::cout << "NOT sealed; missing:\n";
                            for (const auto& m : d["missing"]) std::cout << "  - " << m.get<std::string>() << "\n";
                            std::cout << "evaluations refuse to run unless given --unsafe-no-sandbox\n";
                          }
                          return 0;
                        };
                      });
}  // namespace
