#include "skills/bm25_index.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

#include "skills/tokenizer.h"

namespace kgym::skills {
namespace {

// Smallest relative slack that decides which approximate scores may still be in the top k (see TopK).
constexpr double kMinSlack = 1e-6;

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
      if (it == ix.vocab_.end())
        it = ix.vocab_.emplace(std::string(tok), static_cast<uint32_t>(ix.vocab_.size())).first;
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

  // Terms in at least a quarter of the documents get a dense row; the others postings.
  ix.df_.resize(vocab);
  ix.dense_row_.assign(vocab, -1);
  int32_t rows = 0;
  for (size_t t = 0; t < vocab; ++t) {
    ix.df_[t] = static_cast<uint32_t>(df[t]);
    if (df[t] * 4 >= n) ix.dense_row_[t] = rows++;
  }
  ix.dense_weight_.assign(static_cast<size_t>(rows) * n, 0.0f);
  ix.post_off_.assign(vocab + 1, 0);
  for (size_t t = 0; t < vocab; ++t) ix.post_off_[t + 1] = ix.post_off_[t] + (ix.dense_row_[t] < 0 ? df[t] : 0);
  ix.post_doc_.resize(ix.post_off_[vocab]);
  ix.post_weight_.resize(ix.post_off_[vocab]);
  ix.max_weight_.assign(vocab, 0.0f);
  std::vector<uint64_t> fill(ix.post_off_.begin(), ix.post_off_.end() - 1);
  const double k1p1 = params.k1 + 1;
  for (size_t d = 0; d < n; ++d)
    for (uint64_t i = ix.fwd_off_[d]; i < ix.fwd_off_[d + 1]; ++i) {
      const uint32_t t = ix.fwd_term_[i];
      const double tf = ix.fwd_tf_[i];
      const float w = static_cast<float>(tf * k1p1 / (tf + ix.length_norm_[d]));
      if (ix.dense_row_[t] >= 0) {
        ix.dense_weight_[static_cast<size_t>(ix.dense_row_[t]) * n + d] = w;
      } else {
        ix.post_doc_[fill[t]] = static_cast<uint32_t>(d);
        ix.post_weight_[fill[t]++] = w;
      }
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

std::vector<ScoredDoc> Bm25Index::ExhaustiveTopK(const QueryTerms& q, size_t k) const {
  std::vector<ScoredDoc> all;
  for (uint32_t d = 0; d < size(); ++d) {
    const double score = ExactScore(q, d);
    if (score > 0) all.push_back({d, score});
  }
  std::stable_sort(all.begin(), all.end(), [](const ScoredDoc& a, const ScoredDoc& b) { return a.score > b.score; });
  if (all.size() > k) all.resize(k);
  return all;
}

std::vector<ScoredDoc> Bm25Index::TopK(std::string_view query, size_t k) const {
  std::vector<ScoredDoc> result;
  if (k == 0 || size() == 0) return result;
  const QueryTerms q = Resolve(query);
  const size_t m = q.distinct.size();
  if (m == 0) return result;

  // Per distinct term: the multiplier count * idf and an upper bound of its contribution to any document.
  // The approximation: float weights, float accumulators, one multiplication per distinct term instead of one
  // addition per occurrence. With m positive terms a document's sum is off by at most about (m + 2) * 2^-24
  // relative; the slack is four times that, so no document that belongs in the top k is ever cut.
  const double slack = std::max(kMinSlack, static_cast<double>(m + 4) * 0x1p-22);
  std::vector<double> mult(m), bound(m);
  for (size_t i = 0; i < m; ++i) {
    mult[i] = q.count[i] * idf_[q.distinct[i]];
    bound[i] = mult[i] * max_weight_[q.distinct[i]] * (1 + slack);
    // A subtracting term breaks every bound argument below; it only happens in tiny libraries.
    if (mult[i] < 0) return ExhaustiveTopK(q, k);
  }
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bound[a] > bound[b]; });
  // rest[pos]: bound of the terms after position pos; volume[pos]: their postings (documents) to scan.
  std::vector<double> rest(m, 0.0);
  std::vector<uint64_t> volume(m, 0);
  for (size_t pos = m - 1; pos-- > 0;) {
    rest[pos] = rest[pos + 1] + bound[order[pos + 1]];
    volume[pos] = volume[pos + 1] + df_[q.distinct[order[pos + 1]]];
  }

  const size_t n = size();
  thread_local std::vector<float> acc;
  thread_local std::vector<double> tmp;
  thread_local std::vector<uint8_t> mark;  // candidate flags, once pruned
  acc.assign(n, 0.0f);
  float* a = acc.data();
  std::vector<float> multf(m);
  for (size_t i = 0; i < m; ++i) multf[i] = static_cast<float>(mult[i]);
  auto add_term = [&](size_t i) {  // every document containing the term
    const uint32_t t = q.distinct[i];
    const float mu = multf[i];
    if (dense_row_[t] >= 0) {
      const float* w = dense_weight_.data() + static_cast<size_t>(dense_row_[t]) * n;
      for (size_t d = 0; d < n; ++d) a[d] += mu * w[d];
    } else {
      const uint32_t* doc = post_doc_.data();
      const float* w = post_weight_.data();
      for (uint64_t p = post_off_[t], e = post_off_[t + 1]; p < e; ++p) a[doc[p]] += mu * w[p];
    }
  };
  // The k-th largest accumulator over all documents (0 when fewer than k are positive): a valid lower bound of the
  // final k-th score, since every term adds a non-negative amount.
  auto kth_dense = [&] {
    tmp.clear();
    double floor = 0;
    for (size_t d = 0; d < n; ++d) {
      if (a[d] <= floor) continue;
      tmp.push_back(a[d]);
      if (tmp.size() >= 8 * k + 64) {  // keep the buffer small: retain the best k, raise the floor
        std::nth_element(tmp.begin(), tmp.begin() + (k - 1), tmp.end(), std::greater<double>());
        floor = tmp[k - 1];
        tmp.resize(k);
      }
    }
    if (tmp.size() < k) return 0.0;
    std::nth_element(tmp.begin(), tmp.begin() + (k - 1), tmp.end(), std::greater<double>());
    return tmp[k - 1];
  };

  std::vector<uint32_t> cand;  // after pruning: the documents that may still reach the top k
  bool pruned = false;
  int checks = 0;
  const double k1p1 = params_.k1 + 1;
  for (size_t pos = 0; pos < m; ++pos) {
    const size_t i = order[pos];
    const uint32_t t = q.distinct[i];
    if (!pruned) {
      add_term(i);
      // MaxScore: once the remaining terms together cannot lift a document outside the current top k to the
      // k-th score, only the few documents near the top need them. A check costs one pass over the
      // accumulators, so it is made only while much more than that is left to scan.
      if (pos + 1 < m && volume[pos] > 2 * n && checks < 4) {
        ++checks;
        const double theta = kth_dense() * (1 - slack);
        if (theta > 0 && rest[pos] < theta) {
          mark.assign(n, 0);
          for (uint32_t d = 0; d < n; ++d)
            if (a[d] + rest[pos] >= theta) {
              cand.push_back(d);
              mark[d] = 1;
            }
          pruned = true;
        }
      }
      continue;
    }
    const float mu = multf[i];
    if (dense_row_[t] >= 0) {
      const float* w = dense_weight_.data() + static_cast<size_t>(dense_row_[t]) * n;
      for (uint32_t d : cand) a[d] += mu * w[d];
    } else {
      // Few candidates: look the term up in each one's forward list; many: one pass over the postings.
      if (cand.size() * 8 < df_[t]) {
        for (uint32_t d : cand) {
          const uint32_t tf = TermFrequency(d, t);
          if (tf) a[d] += mu * static_cast<float>(tf * k1p1 / (tf + length_norm_[d]));
        }
      } else {
        for (uint64_t p = post_off_[t], e = post_off_[t + 1]; p < e; ++p)
          if (mark[post_doc_[p]]) a[post_doc_[p]] += mu * post_weight_[p];
      }
    }
    if (cand.size() > k) {  // drop candidates that can no longer reach the k-th score
      tmp.resize(cand.size());
      for (size_t c = 0; c < cand.size(); ++c) tmp[c] = a[cand[c]];
      std::nth_element(tmp.begin(), tmp.begin() + (k - 1), tmp.end(), std::greater<double>());
      const double theta = tmp[k - 1] * (1 - slack);
      std::erase_if(cand, [&](uint32_t d) {
        if (a[d] + rest[pos] >= theta) return false;
        mark[d] = 0;
        return true;
      });
    }
  }

  // Candidates for exact rescoring: documents whose approximate score is within the error margin of the k-th.
  if (!pruned) {
    const double theta = kth_dense() * (1 - slack);
    for (uint32_t d = 0; d < n; ++d)
      if (a[d] > 0 && a[d] >= theta) cand.push_back(d);
  } else {
    std::erase_if(cand, [&](uint32_t d) { return a[d] <= 0; });
    if (cand.size() > k) {
      tmp.resize(cand.size());
      for (size_t c = 0; c < cand.size(); ++c) tmp[c] = a[cand[c]];
      std::nth_element(tmp.begin(), tmp.begin() + (k - 1), tmp.end(), std::greater<double>());
      const double theta = tmp[k - 1] * (1 - slack);
      std::erase_if(cand, [&](uint32_t d) { return a[d] < theta; });
    }
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
