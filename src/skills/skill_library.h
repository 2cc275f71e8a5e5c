// SkillLibrary: the skills of one snapshot in memory, looked up by name and searched with BM25 over each skill's
// IndexedText (name, description, tags, full content; research/davinci.md §2). The index is built on the first
// search after construction (daVinci rebuilds it lazily after every load or flush; here a new snapshot is a new
// SkillLibrary). Not thread-safe while the index is being built: call Search once, or Prepare(), before sharing.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "skills/bm25_index.h"
#include "skills/skill_record.h"

namespace kgym::skills {

struct SearchHit {
  const SkillRecord* skill;
  double score;
};

class SkillLibrary {
 public:
  SkillLibrary() = default;
  explicit SkillLibrary(std::vector<SkillRecord> skills);  // first occurrence of a name wins

  const std::vector<SkillRecord>& skills() const { return skills_; }
  size_t size() const { return skills_.size(); }
  bool empty() const { return skills_.empty(); }
  const SkillRecord* Find(std::string_view name) const;

  void Prepare() const;
  // BM25 top `top` skills with score > 0, in rank order (score descending, ties in library order).
  std::vector<SearchHit> Search(std::string_view query, size_t top = 20) const;

 private:
  std::vector<SkillRecord> skills_;
  std::unordered_map<std::string, size_t> by_name_;
  mutable std::unique_ptr<Bm25Index> index_;
};

}  // namespace kgym::skills
