// `kgym skills add|list|search`: manage a skill library directory of global_step_<N>.jsonl snapshots.
//   add --library DIR FILE.jsonl   validate every record of FILE, then write the next snapshot (old skills plus
//                                  the new ones, names normalised, "_1", "_2", ... on collision); one bad record
//                                  rejects the whole file with its line and field named, and nothing changes
//   list --library DIR [--step N] [--json]
//   search --library DIR --query TEXT [--top 20] [--step N] [--json]   BM25 (rank_bm25's BM25Okapi) ranking
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>

#include "cli/command_registry.h"
#include "skills/skill_library.h"
#include "skills/snapshot_store.h"

namespace {
using namespace kgym::skills;

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
    std::printf("(no snapshot in %s%s)\n", dir.c_str(), step >= 0 ? (" at or below step " + std::to_string(step)).c_str() : "");
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

KGYM_REGISTER_COMMAND("skills", "manage and search a skill library (add, list, search)",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
  struct Opts {
    std::string dir, file, query;
    int64_t step = -1;
    size_t top = 20;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  sub->require_subcommand(1);
  CLI::App* add = sub->add_subcommand("add", "validate the records of FILE.jsonl and add them as the next snapshot");
  add->add_option("--library", o->dir, "library directory")->required();
  add->add_option("file", o->file, "JSONL file of skill records")->required();
  CLI::App* list = sub->add_subcommand("list", "list the skills of the newest snapshot (at or below --step)");
  list->add_option("--library", o->dir, "library directory")->required();
  list->add_option("--step", o->step, "newest snapshot with step <= N");
  list->add_flag("--json", o->json, "print the records as a JSON array");
  CLI::App* search = sub->add_subcommand("search", "BM25 search (rank_bm25 BM25Okapi scores, score > 0 only)");
  search->add_option("--library", o->dir, "library directory")->required();
  search->add_option("--query", o->query, "query text")->required();
  search->add_option("--top", o->top, "number of results (default 20)");
  search->add_option("--step", o->step, "newest snapshot with step <= N");
  search->add_flag("--json", o->json, "print a JSON array of {\"name\", \"score\"} in rank order");
  return [=] {
    if (add->parsed()) return RunAdd(o->dir, o->file);
    if (list->parsed()) return RunList(o->dir, o->step, o->json);
    if (search->parsed()) return RunSearch(o->dir, o->step, o->query, o->top, o->json);
    return 2;
  };
});

}  // namespace
