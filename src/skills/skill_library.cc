#include "skills/skill_library.h"

namespace kgym::skills {

SkillLibrary::SkillLibrary(std::vector<SkillRecord> skills) {
  for (auto& s : skills)
    if (by_name_.emplace(s.name, skills_.size()).second) skills_.push_back(std::move(s));
}

const SkillRecord* SkillLibrary::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &skills_[it->second];
}

void SkillLibrary::Prepare() const {
  if (index_) return;
  std::vector<std::string> docs;
  docs.reserve(skills_.size());
  for (const auto& s : skills_) docs.push_back(IndexedText(s));
  index_ = std::make_unique<Bm25Index>(Bm25Index::Build(docs));
}

std::vector<SearchHit> SkillLibrary::Search(std::string_view query, size_t top) const {
  Prepare();
  std::vector<SearchHit> hits;
  for (const ScoredDoc& d : index_->TopK(query, top)) hits.push_back({&skills_[d.doc], d.score});
  return hits;
}

}  // namespace kgym::skills
