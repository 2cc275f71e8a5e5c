// `kgym skills add|list|search`: manage a skill library directory of global_step_<N>.jsonl snapshots.
//   add --library DIR FILE.jsonl   validate every record of FILE, then write the next snapshot (old skills plus
//                                  the new ones, names normalised, "_1", "_2", ... on collision); one bad record
//                                  rejects the whole file with its line and field named, and nothing changes
//   list --library DIR [--step N] [--json]
//   search --library DIR --query TEXT [--top 20] [--step N] [--json]   BM25 (rank_bm25's BM25Okapi) ranking
//   evolve RUN_DIR --library DIR --base-url URL --model NAME --server URL   one summary + verification round over
//                                  an agent run, written as the next snapshot (src/skills/evolve.h)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>

#include "cli/command_registry.h"
#include "cli/shared_flags.h"
#include "run/evolve_round.h"
#include "run/run_builder.h"
#include "run/run_params.h"
#include "skills/evolve.h"
#include "skills/skill_library.h"
#include "skills/snapshot_store.h"

namespace {
using namespace kgym::skills;

constexpr const char* kStepHelp = "the newest snapshot with step <= N (default newest)";

int Fail(const std::string& msg) {
  std::fprintf(stderr, "kgym skills: %s\n", msg.c_str());
  return 1;
}

kgym::Status ReadRecords(const std::string& path, std::vector<SkillRecord>* out) {
  std::ifstream in(path);
  if (!in) return kgym::Status::IOError("cannot open " + path);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) return kgym::Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": not JSON");
    SkillRecord s;
    if (auto st = SkillFromJson(j, &s); !st.ok())
      return kgym::Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": " + st.message());
    out->push_back(std::move(s));
  }
  return kgym::Status::Ok();
}

int RunAdd(const std::string& dir, const std::string& file) {
  std::vector<SkillRecord> incoming;
  if (auto st = ReadRecords(file, &incoming); !st.ok()) return Fail(st.message() + " (nothing was added)");
  if (incoming.empty()) return Fail(file + ": no records (nothing was added)");
  LoadedSnapshot snap;
  if (auto st = LoadSnapshot(dir, -1, &snap); !st.ok()) return Fail(st.message());
  std::set<std::string> taken;
  for (const auto& s : snap.skills) taken.insert(s.name);
  std::vector<std::string> added;
  for (auto& s : incoming) {
    const std::string base = NormalizeSkillName(s.name);
    std::string name = base;
    for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
    s.name = name;
    taken.insert(name);
    added.push_back(name);
    snap.skills.push_back(std::move(s));
  }
  const int64_t step = snap.step < 0 ? 0 : snap.step + 1;
  if (auto st = WriteSnapshot(dir, step, snap.skills); !st.ok()) return Fail(st.message() + " (nothing was added)");
  std::printf("added %zu skill(s) to %s (%zu in total)\n", added.size(), SnapshotPath(dir, step).c_str(),
              snap.skills.size());
  for (const auto& n : added) std::printf("  %s\n", n.c_str());
  return 0;
}

int RunList(const std::string& dir, int64_t step, bool json) {
  LoadedSnapshot snap;
  if (auto st = LoadSnapshot(dir, step, &snap); !st.ok()) return Fail(st.message());
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : snap.skills) arr.push_back(s.ToJson());
    std::cout << arr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (snap.step < 0) {
    std::printf("(no snapshot in %s%s)\n", dir.c_str(),
                step >= 0 ? (" at or below step " + std::to_string(step)).c_str() : "");
    return 0;
  }
  std::printf("# %s: %zu skill(s)\n", snap.path.c_str(), snap.skills.size());
  for (const auto& s : snap.skills) std::printf("%s\t%s\t%s\n", s.name.c_str(), s.scope.c_str(), s.description.c_str());
  return 0;
}

int RunSearch(const std::string& dir, int64_t step, const std::string& query, size_t top, bool json) {
  LoadedSnapshot snap;
  if (auto st = LoadSnapshot(dir, step, &snap); !st.ok()) return Fail(st.message());
  SkillLibrary lib(std::move(snap.skills));
  auto hits = lib.Search(query, top);
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& h : hits) arr.push_back({{"name", h.skill->name}, {"score", h.score}});
    std::cout << arr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  for (size_t i = 0; i < hits.size(); ++i)
    std::printf("%2zu. %-40s %.6f\n", i + 1, hits[i].skill->name.c_str(), hits[i].score);
  if (hits.empty()) std::printf("(no skill scores above 0)\n");
  return 0;
}

struct EvolveArgs {
  kgym::run::RunSpec spec;
  kgym::run::EvolveRound round;  // its flags bind here (run/evolve_round.h builds the options)
  bool json = false;
  EvolveArgs() {
    spec.gym.request.num_perf_trials = 100;
    spec.gym.eval_concurrency = 8;
  }
};

int RunEvolveCommand(const std::string& dir, int64_t step, const EvolveArgs& a) {
  std::unique_ptr<kgym::run::RunParts> parts;
  if (kgym::Status st = kgym::run::RunParts::Build(a.spec, &parts); !st.ok()) return Fail("evolve: " + st.message());
  kgym::run::EvolveRound round = a.round;
  round.library_dir = dir;
  round.step = step;
  const EvolveOptions o = kgym::run::BuildEvolveOptions(a.spec, round);
  nlohmann::json report;
  kgym::Status st = RunEvolve(o, *parts->llm(), parts->gym(), &report);
  if (!st.ok()) return Fail("evolve: " + st.message());
  if (a.json) {
    std::cout << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  size_t admitted = 0;
  for (const auto& c : report["candidates"]) admitted += c.value("admitted", false) ? 1 : 0;
  std::printf(
      "%zu trajectories, %zu triggered task(s), %zu candidate skill(s), %zu verified, %zu added -> %s "
      "(%zu skills)\n",
      report.value("trajectories", size_t{0}), report["cases"].size(), report["candidates"].size(), admitted,
      report["added"].size(), report.value("snapshot", "").c_str(), report.value("skills", size_t{0}));
  for (const auto& n : report["added"]) std::printf("  + %s\n", n.get<std::string>().c_str());
  for (const auto& d : report["near_duplicates"])
    std::printf("  ~ %s (near-duplicate, dropped)\n", d.get<std::string>().c_str());
  std::printf("report: %s/evolve.json\n", a.round.run_dir.c_str());
  return 0;
}

// evolve's flags: the run's LLM endpoint, gym and seed (src/run/run_params.h), the summary and verification rules.
void AddEvolveFlags(CLI::App* evolve, EvolveArgs* e) {
  using kgym::run::RunGroup;
  evolve->add_option("run_dir", e->round.run_dir, "agent run directory (kgym agent --out)")->required();
  kgym::cli::AddSharedOption(evolve, "--tasks", &e->round.tasks_path, "default: the one in the run's config.json");
  kgym::run::AddRunFlags(evolve, &e->spec, {RunGroup::kLlm, RunGroup::kGym});
  kgym::run::AddRunFlags(evolve, &e->spec, {"--seed", "--skill-summaries"});
  for (const char* required : {"--base-url", "--model", "--server"}) evolve->get_option(required)->required();
  evolve->add_option("--summary-temperature", e->round.summary_temperature)->capture_default_str();
  evolve->add_option("--summary-max-tokens", e->round.summary_max_tokens)->capture_default_str();
  evolve->add_option("--verify-max-tokens", e->round.verify_max_tokens, "greedy turn-1 budget")->capture_default_str();
  evolve->add_option("--trigger-improve", e->round.trigger.improve_over_turn1, "best >= turn 1 x this")
      ->capture_default_str();
  evolve->add_option("--trigger-absolute", e->round.trigger.min_absolute, "best >= this")->capture_default_str();
  evolve->add_option("--verify-absolute", e->round.verify.min_absolute, "verified speedup >= this")
      ->capture_default_str();
  evolve->add_option("--verify-vs-turn1", e->round.verify.min_vs_turn1, "verified speedup >= turn 1 x this")
      ->capture_default_str();
  evolve->add_flag("--second-task", e->round.verify.require_second_task,
                   "also require a pass on another task of the run");
  evolve
      ->add_option("--near-duplicate", e->round.flush.near_duplicate_threshold,
                   "drop a new skill whose BM25 similarity to an existing one reaches this (0 = names only)")
      ->capture_default_str();
  evolve
      ->add_option("--usage-success", e->round.usage_success_speedup,
                   "a use succeeds when some turn reaches this speedup")
      ->capture_default_str();
  evolve->add_flag("--force", e->round.force, "evolve again from a run that already has evolve.json");
  // Old names (issue 35: one name per concept across commands).
  kgym::run::AddOldRunFlag(evolve, "--timeout", "--llm-timeout", &e->spec);
  kgym::run::AddOldRunFlag(evolve, "--retries", "--max-retries", &e->spec);
  kgym::run::AddOldRunFlag(evolve, "--concurrency", "--eval-concurrency", &e->spec);
  kgym::run::AddOldRunFlag(evolve, "--summaries", "--skill-summaries", &e->spec);
}

KGYM_REGISTER_COMMAND(
    "skills", "manage, search and evolve a skill library (add, list, search, evolve)",
    [](CLI::App* sub) -> kgym::cli::CommandRunner {
      struct Opts {
        std::string dir, file, query;
        int64_t step = -1;
        size_t top = 20;
        bool json = false;
      };
      auto o = std::make_shared<Opts>();
      sub->require_subcommand(1);
      CLI::App* add =
          sub->add_subcommand("add", "validate the records of FILE.jsonl and add them as the next snapshot");
      add->add_option("--library", o->dir, "library directory")->required();
      add->add_option("file", o->file, "JSONL file of skill records")->required();
      CLI::App* list = sub->add_subcommand("list", "list the skills of the newest snapshot (at or below --step)");
      list->add_option("--library", o->dir, "library directory")->required();
      list->add_option("--step", o->step, kStepHelp);
      kgym::cli::AddSharedOption(list, "--json", &o->json, "the records, as an array");
      CLI::App* search = sub->add_subcommand("search", "BM25 search (rank_bm25 BM25Okapi scores, score > 0 only)");
      search->add_option("--library", o->dir, "library directory")->required();
      search->add_option("--query", o->query, "query text")->required();
      search->add_option("--top", o->top, "number of results (default 20)");
      search->add_option("--step", o->step, kStepHelp);
      kgym::cli::AddSharedOption(search, "--json", &o->json, "an array of {\"name\", \"score\"} in rank order");
      auto e = std::make_shared<EvolveArgs>();
      CLI::App* evolve = sub->add_subcommand(
          "evolve",
          "summarise an agent run's best trajectories into skills, verify them on the gym, write the next "
          "snapshot");
      evolve->add_option("--library", o->dir, "library directory")->required();
      evolve->add_option("--step", o->step, kStepHelp);
      kgym::cli::AddSharedOption(evolve, "--json", &e->json, "the whole report");
      AddEvolveFlags(evolve, e.get());
      return [=] {
        if (evolve->parsed()) return RunEvolveCommand(o->dir, o->step, *e);
        if (add->parsed()) return RunAdd(o->dir, o->file);
        if (list->parsed()) return RunList(o->dir, o->step, o->json);
        if (search->parsed()) return RunSearch(o->dir, o->step, o->query, o->top, o->json);
        return 2;
      };
    });

}  // namespace
