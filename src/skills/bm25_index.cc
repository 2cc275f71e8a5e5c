#include "skills/bm25_index.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

#include "skills/tokenizer.h"

namespace kgym::skills {
namespace {

// Relative slack that decides which approximate scores may still be in the top k. The approximation (float
// weights, per-term multiplication instead of repeated addition) is off by < 1e-7 relative; 1e-6 is safe.
constexpr double kSlack = 1e-6;

// Per-thread scratch for TopK: an accumulator per document, valid where stamp == epoch (no O(N) clearing).
struct Scratch {
  std::vector<uint32_t> stamp;
  std::vector<double> acc;
  uint32_t epoch = 0;
  void Begin(size_t n) {
    if (stamp.size() < n) {
      stamp.resize(n, 0);
      acc.resize(n, 0.0);
    }
    if (++epoch == 0) {
      std::fill(stamp.begin(), stamp.end(), 0);
      epoch = 1;
    }
  }
};

// The k-th largest of acc[d] over docs (k >= 1, docs.size() >= k).
double KthLargest(const std::vector<uint32_t>& docs, const std::vector<double>& acc, size_t k,
                  std::vector<double>* tmp) {
  tmp->resize(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) (*tmp)[i] = acc[docs[i]];
  std::nth_element(tmp->begin(), tmp->begin() + (k - 1), tmp->end(), std::greater<double>());
  return (*tmp)[k - 1];
}

}  // namespace

Bm25Index Bm25Index::Build(const std::vector<std::string>& docs, Bm25Params params) {
  Bm25Index ix;
  ix.params_ = params;
  const size_t n = docs.size();
  ix.doc_len_.resize(n);
  ix.fwd_off_.assign(n + 1, 0);
  std::vector<uint32_t> ids;
  uint64_t total_len = 0;
  for (size_t d = 0; d < n; ++d) {
    ids.clear();
    std::string norm = NormalizeForTokens(docs[d]);
    ForEachToken(norm, [&](std::string_view tok) {
      auto it = ix.vocab_.find(tok);
      if (it == ix.vocab_.end()) it = ix.vocab_.emplace(std::string(tok), static_cast<uint32_t>(ix.vocab_.size())).first;
      ids.push_back(it->second);
    });
    ix.doc_len_[d] = static_cast<uint32_t>(ids.size());
    total_len += ids.size();
    std::sort(ids.begin(), ids.end());
    for (size_t i = 0; i < ids.size();) {
      size_t j = i;
      while (j < ids.size() && ids[j] == ids[i]) ++j;
      ix.fwd_term_.push_back(ids[i]);
      ix.fwd_tf_.push_back(static_cast<uint32_t>(j - i));
      i = j;
    }
    ix.fwd_off_[d + 1] = ix.fwd_term_.size();
  }
  const size_t vocab = ix.vocab_.size();
  if (n == 0 || vocab == 0) return ix;  // no term can score; TopK returns nothing

  ix.avgdl_ = static_cast<double>(total_len) / static_cast<double>(n);
  ix.length_norm_.resize(n);
  for (size_t d = 0; d < n; ++d)
    ix.length_norm_[d] = params.k1 * ((1 - params.b) + params.b * static_cast<double>(ix.doc_len_[d]) / ix.avgdl_);

  std::vector<uint64_t> df(vocab, 0);
  for (uint32_t t : ix.fwd_term_) ++df[t];
  ix.idf_.resize(vocab);
  double idf_sum = 0;
  for (size_t t = 0; t < vocab; ++t) {
    const double nd = static_cast<double>(df[t]);
    if (params.idf == Bm25Params::Idf::kPositive) {
      ix.idf_[t] = std::log(1.0 + (static_cast<double>(n - df[t]) + 0.5) / (nd + 0.5));
    } else {
      ix.idf_[t] = std::log(static_cast<double>(n - df[t]) + 0.5) - std::log(nd + 0.5);
    }
    idf_sum += ix.idf_[t];
  }
  ix.average_idf_ = idf_sum / static_cast<double>(vocab);
  if (params.idf == Bm25Params::Idf::kOkapi) {
    const double eps = params.epsilon * ix.average_idf_;
    for (double& v : ix.idf_)
      if (v < 0) v = eps;
  }

  ix.post_off_.assign(vocab + 1, 0);
  for (size_t t = 0; t < vocab; ++t) ix.post_off_[t + 1] = ix.post_off_[t] + df[t];
  ix.post_doc_.resize(ix.fwd_term_.size());
  ix.post_weight_.resize(ix.fwd_term_.size());
  ix.max_weight_.assign(vocab, 0.0f);
  std::vector<uint64_t> fill(ix.post_off_.begin(), ix.post_off_.end() - 1);
  const double k1p1 = params.k1 + 1;
  for (size_t d = 0; d < n; ++d)
    for (uint64_t i = ix.fwd_off_[d]; i < ix.fwd_off_[d + 1]; ++i) {
      const uint32_t t = ix.fwd_term_[i];
      const double tf = ix.fwd_tf_[i];
      const float w = static_cast<float>(tf * k1p1 / (tf + ix.length_norm_[d]));
      ix.post_doc_[fill[t]] = static_cast<uint32_t>(d);
      ix.post_weight_[fill[t]++] = w;
      ix.max_weight_[t] = std::max(ix.max_weight_[t], w);
    }
  return ix;
}

double Bm25Index::Idf(std::string_view token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? 0.0 : idf_[it->second];
}

Bm25Index::QueryTerms Bm25Index::Resolve(std::string_view query) const {
  QueryTerms q;
  if (idf_.empty()) return q;
  std::string norm = NormalizeForTokens(query);
  std::unordered_map<uint32_t, uint32_t> slot;
  ForEachToken(norm, [&](std::string_view tok) {
    auto it = vocab_.find(tok);
    if (it == vocab_.end()) return;  // unknown terms contribute 0
    q.ordered.push_back(it->second);
    auto [s, inserted] = slot.emplace(it->second, static_cast<uint32_t>(q.distinct.size()));
    if (inserted) {
      q.distinct.push_back(it->second);
      q.count.push_back(0);
    }
    ++q.count[s->second];
  });
  return q;
}

uint32_t Bm25Index::TermFrequency(uint32_t doc, uint32_t term) const {
  auto b = fwd_term_.begin() + static_cast<std::ptrdiff_t>(fwd_off_[doc]);
  auto e = fwd_term_.begin() + static_cast<std::ptrdiff_t>(fwd_off_[doc + 1]);
  auto it = std::lower_bound(b, e, term);
  return (it != e && *it == term) ? fwd_tf_[static_cast<size_t>(it - fwd_term_.begin())] : 0;
}

// rank_bm25 adds idf * tf * (k1 + 1) / (tf + norm) for every query token in order; tokens absent from the
// document add exactly zero, so skipping them leaves the floating-point sum unchanged.
double Bm25Index::ExactScore(const QueryTerms& q, uint32_t doc) const {
  const double k1p1 = params_.k1 + 1;
  double score = 0.0;
  for (uint32_t t : q.ordered) {
    const uint32_t tf = TermFrequency(doc, t);
    if (tf == 0) continue;
    const double f = tf;
    score += idf_[t] * (f * k1p1 / (f + length_norm_[doc]));
  }
  return score;
}

std::vector<double> Bm25Index::Scores(std::string_view query) const {
  std::vector<double> out(size(), 0.0);
  QueryTerms q = Resolve(query);
  if (q.ordered.empty()) return out;
  for (uint32_t d = 0; d < size(); ++d) out[d] = ExactScore(q, d);
  return out;
}

double Bm25Index::Score(std::string_view query, uint32_t doc) const {
  if (doc >= size()) return 0.0;
  QueryTerms q = Resolve(query);
  return ExactScore(q, doc);
}

std::vector<ScoredDoc> Bm25Index::TopK(std::string_view query, size_t k) const {
  std::vector<ScoredDoc> result;
  if (k == 0 || size() == 0) return result;
  const QueryTerms q = Resolve(query);
  const size_t m = q.distinct.size();
  if (m == 0) return result;

  // Per distinct term: the multiplier count * idf and an upper bound of its contribution to any document.
  std::vector<double> mult(m), bound(m);
  bool negative = false;
  for (size_t i = 0; i < m; ++i) {
    mult[i] = q.count[i] * idf_[q.distinct[i]];
    bound[i] = std::abs(mult[i]) * max_weight_[q.distinct[i]] * (1 + kSlack);
    negative |= mult[i] < 0;
  }
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bound[a] > bound[b]; });
  std::vector<double> rest(m + 1, 0.0);  // rest[i] = bound of the terms after position i in `order`
  for (size_t i = m; i-- > 0;) rest[i] = (i + 1 < m ? rest[i + 1] + bound[order[i + 1]] : 0.0);
  const double total_bound = m ? rest[0] + bound[order[0]] : 0.0;

  thread_local Scratch s;
  thread_local std::vector<double> tmp;
  s.Begin(size());
  std::vector<uint32_t> cand;  // documents touched so far (or, after pruning, the survivors)
  bool pruning = false;        // true once no untouched document can reach the top k
  double max_acc = 0;
  const double k1p1 = params_.k1 + 1;

  for (size_t pos = 0; pos < m; ++pos) {
    const size_t i = order[pos];
    const uint32_t t = q.distinct[i];
    const uint64_t pb = post_off_[t], pe = post_off_[t + 1];
    if (!pruning) {
      for (uint64_t p = pb; p < pe; ++p) {
        const uint32_t d = post_doc_[p];
        if (s.stamp[d] != s.epoch) {
          s.stamp[d] = s.epoch;
          s.acc[d] = 0.0;
          cand.push_back(d);
        }
        s.acc[d] += mult[i] * post_weight_[p];
        max_acc = std::max(max_acc, s.acc[d]);
      }
      // MaxScore: once the remaining terms together cannot lift an untouched document to the current k-th score,
      // only documents already touched need the remaining terms (only valid when no term subtracts).
      if (!negative && cand.size() >= k && rest[pos] < max_acc * (1 - kSlack)) {
        const double theta = KthLargest(cand, s.acc, k, &tmp) * (1 - kSlack);
        if (rest[pos] < theta) pruning = true;
      }
    } else {
      if (cand.size() * 8 < pe - pb) {
        for (uint32_t d : cand) {
          const uint32_t tf = TermFrequency(d, t);
          if (tf) s.acc[d] += mult[i] * (tf * k1p1 / (tf + length_norm_[d]));
        }
      } else {
        for (uint64_t p = pb; p < pe; ++p) {
          const uint32_t d = post_doc_[p];
          if (s.stamp[d] == s.epoch) s.acc[d] += mult[i] * post_weight_[p];
        }
      }
    }
    if (pruning && cand.size() > k) {  // drop touched documents that can no longer reach the k-th score
      const double theta = KthLargest(cand, s.acc, k, &tmp) * (1 - kSlack);
      std::erase_if(cand, [&](uint32_t d) {
        if (s.acc[d] + rest[pos] >= theta) return false;
        s.stamp[d] = 0;  // excluded from later posting scans
        return true;
      });
    }
  }

  // Candidates for exact rescoring: documents whose approximate score is within the error margin of the k-th.
  const double margin = negative ? kSlack * total_bound + 1e-300 : 0.0;
  std::erase_if(cand, [&](uint32_t d) { return s.acc[d] <= -margin || (!negative && s.acc[d] <= 0); });
  if (cand.size() > k) {
    const double kth = KthLargest(cand, s.acc, k, &tmp);
    const double cut = negative ? kth - 2 * margin : kth * (1 - kSlack);
    std::erase_if(cand, [&](uint32_t d) { return s.acc[d] < cut; });
  }
  result.reserve(cand.size());
  for (uint32_t d : cand) {
    const double exact = ExactScore(q, d);
    if (exact > 0) result.push_back({d, exact});
  }
  std::sort(result.begin(), result.end(), [](const ScoredDoc& a, const ScoredDoc& b) {
    return a.score != b.score ? a.score > b.score : a.doc < b.doc;
  });
  if (result.size() > k) result.resize(k);
  return result;
}

}  // namespace kgym::skills
