// bm25_bench: times SkillLibrary::Search (the daVinci tokenizer + the inverted BM25 index, top k with score > 0)
// over a JSONL file of skill records and a JSON array of query strings. Each query runs `--reps` times after one
// warm-up call; the output (stdout, one JSON object) has the index build time, every query's median latency and
// its hits, so the driver (run_bm25.py) can check them against rank_bm25 and compute the latency table.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "skills/skill_library.h"

namespace {
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

int main(int argc, char** argv) {
  std::string skills_path, queries_path;
  size_t top = 20;
  int reps = 5;
  CLI::App app{"time BM25 top-k search over a skill library"};
  app.add_option("--skills", skills_path, "JSONL file of skill records")->required();
  app.add_option("--queries", queries_path, "JSON array of query strings")->required();
  app.add_option("--top", top, "results per query")->capture_default_str();
  app.add_option("--reps", reps, "timed repetitions per query (after one warm-up)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<kgym::skills::SkillRecord> records;
  {
    std::ifstream in(skills_path);
    if (!in) {
      std::cerr << "bm25_bench: cannot open " << skills_path << "\n";
      return 1;
    }
    std::string line;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
      kgym::skills::SkillRecord s;
      auto st = kgym::skills::SkillFromJson(nlohmann::json::parse(line), &s);
      if (!st.ok()) {
        std::cerr << "bm25_bench: " << skills_path << ":" << lineno << ": " << st.message() << "\n";
        return 1;
      }
      records.push_back(std::move(s));
    }
  }
  std::vector<std::string> queries;
  {
    std::ifstream in(queries_path);
    queries = nlohmann::json::parse(in).get<std::vector<std::string>>();
  }

  const auto t0 = Clock::now();
  kgym::skills::SkillLibrary lib(std::move(records));
  lib.Prepare();
  const auto t1 = Clock::now();

  nlohmann::json out;
  out["docs"] = lib.size();
  out["build_s"] = Seconds(t0, t1);
  out["top"] = top;
  out["reps"] = reps;
  out["queries"] = nlohmann::json::array();
  for (const auto& q : queries) {
    auto hits = lib.Search(q, top);  // warm-up (first touch of the scratch buffers and postings)
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      const auto a = Clock::now();
      hits = lib.Search(q, top);
      times.push_back(Seconds(a, Clock::now()));
    }
    nlohmann::json h = nlohmann::json::array();
    for (const auto& hit : hits) h.push_back({hit.skill->name, hit.score});
    out["queries"].push_back(
        {{"median_s", Median(times)}, {"min_s", *std::min_element(times.begin(), times.end())}, {"hits", h}});
  }
  std::cout << out.dump() << "\n";
  return 0;
}
