// Bm25Index: an inverted index that returns exactly the scores of rank_bm25's BM25Okapi (research/davinci.md §2)
// over the daVinci tokenizer, and answers top-k queries by walking only the postings of the query's terms.
//
// Math (reproduced bit for bit, including floating-point operation order): N docs, n(t) docs containing t,
// idf(t) = ln(N - n + 0.5) - ln(n + 0.5); avg_idf = mean of idf over the vocabulary in first-occurrence order;
// each negative idf is replaced by epsilon * avg_idf; score(d, q) = sum over query tokens *with repetition*, in
// query order, of idf(t) * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * dl / avgdl)).
//
// TopK ranks by score descending, ties by document index (a stable sort), and keeps only scores > 0. Internally
// it accumulates approximate sums (float weights and accumulators, one pass per distinct query term, terms
// with the largest possible contribution first), stops scanning whole postings once the terms left cannot lift
// an unseen document into the top k (MaxScore), then rescores the few surviving candidates exactly in query
// order; the margin that decides survival is larger than the approximation error, so the result equals the
// exhaustive ranking. Terms present in at least a quarter of the documents are stored as dense rows (one float
// per document) rather than postings: no larger than postings at half the documents, and summed without
// indirection. When some idf is negative (tiny libraries) TopK ranks the exact scores of every document.
//
// An index is immutable after Build; const methods are safe to call from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kgym::skills {

struct Bm25Params {
  double k1 = 1.5;
  double b = 0.75;
  double epsilon = 0.25;
  // kOkapi: rank_bm25's idf with the average-idf floor. kPositive: ln(1 + (N - n + 0.5) / (n + 0.5)), always > 0
  // (used for near-duplicate similarity, where tiny libraries would otherwise give no signal).
  enum class Idf { kOkapi, kPositive } idf = Idf::kOkapi;
};

struct ScoredDoc {
  uint32_t doc;
  double score;
};

class Bm25Index {
 public:
  Bm25Index() = default;
  // Indexes `docs` (raw text; tokenised with the daVinci tokenizer). Document i keeps index i.
  static Bm25Index Build(const std::vector<std::string>& docs, Bm25Params params = {});

  size_t size() const { return doc_len_.size(); }
  double avgdl() const { return avgdl_; }
  double average_idf() const { return average_idf_; }
  // Final idf (after the floor) of a token, 0 for a token not in the vocabulary.
  double Idf(std::string_view token) const;

  // Exact score of every document (the reference path; O(N * query length)).
  std::vector<double> Scores(std::string_view query) const;
  // Exact score of one document.
  double Score(std::string_view query, uint32_t doc) const;
  // The k best documents with score > 0, score descending, ties by ascending document index; exact scores.
  std::vector<ScoredDoc> TopK(std::string_view query, size_t k) const;

 private:
  struct QueryTerms {
    std::vector<uint32_t> ordered;   // known query tokens in order, with repetition (term ids)
    std::vector<uint32_t> distinct;  // distinct term ids
    std::vector<uint32_t> count;     // occurrences of distinct[i]
  };
  QueryTerms Resolve(std::string_view query) const;
  uint32_t TermFrequency(uint32_t doc, uint32_t term) const;
  double ExactScore(const QueryTerms& q, uint32_t doc) const;
  std::vector<ScoredDoc> ExhaustiveTopK(const QueryTerms& q, size_t k) const;

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  Bm25Params params_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> vocab_;  // term -> id, first-occurrence order
  std::vector<double> idf_;                                                 // per term, after the floor
  std::vector<float> max_weight_;  // per term: max over its postings of the float weight
  std::vector<uint32_t> doc_len_;
  std::vector<double> length_norm_;  // per doc: k1 * (1 - b + b * dl / avgdl), rank_bm25's operation order
  double avgdl_ = 0, average_idf_ = 0;
  // Postings (CSR by term; empty for terms with a dense row): documents ascending, weight = tf * (k1 + 1) /
  // (tf + length_norm) as float.
  std::vector<uint64_t> post_off_;
  std::vector<uint32_t> post_doc_;
  std::vector<float> post_weight_;
  // Dense rows of frequent terms: dense_row_[t] = row index or -1; row r is dense_weight_[r*N, (r+1)*N).
  std::vector<int32_t> dense_row_;
  std::vector<uint32_t> df_;  // per term: documents containing it
  std::vector<float> dense_weight_;
  // Forward index (CSR by document): term ids ascending with their tf, for exact rescoring.
  std::vector<uint64_t> fwd_off_;
  std::vector<uint32_t> fwd_term_;
  std::vector<uint32_t> fwd_tf_;
};

}  // namespace kgym::skills
