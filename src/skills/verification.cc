#include "skills/verification.h"

#include <algorithm>
#include <random>
#include <set>

#include "skills/bm25_index.h"

namespace kgym::skills {

std::string VerificationInjection(const std::optional<std::string>& original_injected, const SkillRecord& skill) {
  const std::string text = RenderSkill(skill);
  if (!original_injected || original_injected->empty()) return text;
  return *original_injected + "\n\n---\n\n" + text;
}

bool VerificationPasses(const VerificationRun& run, const VerifyOptions& opts) {
  return run.correct && run.speedup > 0 && run.turn1_speedup > 0 && run.speedup >= opts.min_absolute &&
         run.speedup >= run.turn1_speedup * opts.min_vs_turn1;
}

Admission AdmitCandidate(const CandidateSkill& c, const VerifyOptions& opts) {
  Admission a;
  bool origin_pass = false, other_pass = false;
  for (const auto& r : c.runs) {
    if (!VerificationPasses(r, opts)) continue;
    if (r.task_uid == c.origin_task) {
      origin_pass = true;
      a.verify_speedup = std::max(a.verify_speedup, r.speedup);
    } else {
      other_pass = true;
    }
  }
  if (!origin_pass) {
    a.reason = "no verification run on task " + c.origin_task + " passed";
  } else if (opts.require_second_task && !other_pass) {
    a.reason = "no verification run on a second task passed";
  } else {
    a.admitted = true;
  }
  if (!a.admitted) a.verify_speedup = 0;
  return a;
}

std::optional<std::string> ChooseSecondTask(const std::string& origin, const std::vector<std::string>& tasks,
                                            uint64_t seed) {
  std::vector<std::string> others;
  for (const auto& t : tasks)
    if (t != origin) others.push_back(t);
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  if (others.empty()) return std::nullopt;
  std::mt19937_64 rng(seed);
  return others[std::uniform_int_distribution<size_t>(0, others.size() - 1)(rng)];
}

void SkillStaging::Offer(const std::string& task_uid, SkillRecord skill, double verify_speedup) {
  skill.verify_speedup = verify_speedup;
  auto it = staged_.find(task_uid);
  if (it == staged_.end() || verify_speedup > it->second.verify_speedup.value_or(0)) staged_[task_uid] = skill;
}

void SkillStaging::RecordUsage(const std::vector<std::string>& names, bool succeeded) {
  std::set<std::string> once(names.begin(), names.end());
  for (const auto& n : once) {
    auto& u = usage_[n];
    ++u.first;
    if (succeeded) ++u.second;
  }
}

void SkillStaging::Merge(const SkillStaging& other) {
  for (const auto& [task, skill] : other.staged_) Offer(task, skill, skill.verify_speedup.value_or(0));
  for (const auto& [name, u] : other.usage_) {
    usage_[name].first += u.first;
    usage_[name].second += u.second;
  }
}

std::vector<SkillRecord> SkillStaging::Staged() const {
  std::vector<SkillRecord> out;
  for (const auto& [task, skill] : staged_) out.push_back(skill);
  return out;
}

void SkillStaging::Clear() {
  staged_.clear();
  usage_.clear();
}

bool TrajectorySucceeded(const Trajectory& t, double min_speedup) {
  for (const auto& turn : t.turns)
    if (turn.correct && turn.speedup >= min_speedup) return true;
  return false;
}

std::optional<std::string> NearDuplicateOf(const std::vector<SkillRecord>& existing, const SkillRecord& candidate,
                                           double threshold) {
  if (threshold <= 0 || existing.empty()) return std::nullopt;
  std::vector<std::string> docs;
  docs.reserve(existing.size() + 1);
  for (const auto& s : existing) docs.push_back(IndexedText(s));
  const std::string query = IndexedText(candidate);
  docs.push_back(query);
  Bm25Params params;
  params.idf = Bm25Params::Idf::kPositive;
  const Bm25Index ix = Bm25Index::Build(docs, params);
  const uint32_t self = static_cast<uint32_t>(existing.size());
  const double self_score = ix.Score(query, self);
  if (!(self_score > 0)) return std::nullopt;
  for (const ScoredDoc& d : ix.TopK(query, 2)) {
    if (d.doc == self) continue;
    if (d.score / self_score >= threshold) return existing[d.doc].name;
    break;
  }
  return std::nullopt;
}

FlushResult FlushStaged(const std::vector<SkillRecord>& library, const SkillStaging& staging,
                        const FlushOptions& opts) {
  FlushResult r;
  r.skills = library;
  std::set<std::string> taken;
  for (auto& s : r.skills) {
    taken.insert(s.name);
    if (auto it = staging.usage().find(s.name); it != staging.usage().end()) {
      s.uses += it->second.first;
      s.successes = std::min(s.uses, s.successes + it->second.second);
    }
  }
  for (SkillRecord s : staging.Staged()) {
    if (auto dup = NearDuplicateOf(r.skills, s, opts.near_duplicate_threshold)) {
      r.duplicates.push_back(s.name + " ~ " + *dup);
      continue;
    }
    const std::string base = NormalizeSkillName(s.name);
    std::string name = base;
    for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
    s.name = name;
    taken.insert(name);
    r.added.push_back(name);
    r.skills.push_back(std::move(s));
  }
  return r;
}

}  // namespace kgym::skills
