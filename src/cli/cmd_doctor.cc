// `kgym doctor`: which protections the sandbox gets on this machine, and why any is missing.
#include <iostream>

#include "cli/command_registry.h"
#include "eval/evaluator.h"

namespace {
KGYM_REGISTER_COMMAND("doctor", "show which sandbox protections are active here and why any is missing",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto json = std::make_shared<bool>(false);
                        sub->add_flag("--json", *json, "print the report as JSON");
                        return [json]() -> int {
                          std::unique_ptr<kgym::Evaluator> ev;
                          kgym::Status s = kgym::Evaluator::Create({}, &ev);
                          if (!s.ok()) {
                            std::cerr << "kgym doctor: " << s.ToString() << "\n";
                            return 1;
                          }
                          auto d = ev->Doctor();
                          if (*json) {
                            std::cout << d.dump(2) << std::endl;
                            return d.contains("error") ? 1 : 0;
                          }
                          const auto& py = d["python"];
                          std::cout << "python " << py.value("python", "?")
                                    << ", preloaded: " << py.value("modules", nlohmann::json::array()).dump() << " in "
                                    << py.value("import_s", 0.0) << " s\n";
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
