// Bm25Index against a straightforward BM25Okapi written here the way rank_bm25 computes it: per-document term
// frequency maps, idf over the vocabulary in first-occurrence order with the epsilon * average-idf floor, and a
// dense score vector updated once per query token.
#include "skills/bm25_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "skills/tokenizer.h"

namespace kgym::skills {
namespace {

struct ReferenceOkapi {
  std::vector<std::map<std::string, int>> freqs;
  std::vector<int> len;
  std::map<std::string, double> idf;
  double avgdl = 0;

  explicit ReferenceOkapi(const std::vector<std::string>& docs) {
    std::vector<std::string> order;  // first occurrence
    std::map<std::string, int> nd;
    long total = 0;
    for (const auto& d : docs) {
      auto toks = Tokenize(d);
      len.push_back(static_cast<int>(toks.size()));
      total += static_cast<long>(toks.size());
      std::map<std::string, int> f;
      std::vector<std::string> first;
      for (auto& t : toks)
        if (f[t]++ == 0) first.push_back(t);
      for (auto& t : first)
        if (nd[t]++ == 0) order.push_back(t);
      freqs.push_back(f);
    }
    const double n = static_cast<double>(docs.size());
    avgdl = static_cast<double>(total) / n;
    double sum = 0;
    std::vector<std::string> negative;
    for (auto& w : order) {
      double v = std::log(n - nd[w] + 0.5) - std::log(nd[w] + 0.5);
      idf[w] = v;
      sum += v;
      if (v < 0) negative.push_back(w);
    }
    const double eps = 0.25 * (sum / static_cast<double>(order.size()));
    for (auto& w : negative) idf[w] = eps;
  }

  std::vector<double> Scores(const std::string& query) const {
    std::vector<double> score(len.size(), 0.0);
    for (auto& q : Tokenize(query)) {
      auto it = idf.find(q);
      const double w = it == idf.end() ? 0.0 : it->second;
      for (size_t d = 0; d < len.size(); ++d) {
        auto f = freqs[d].find(q);
        const double tf = f == freqs[d].end() ? 0 : f->second;
        score[d] += w * (tf * (1.5 + 1) / (tf + 1.5 * (1 - 0.75 + 0.75 * len[d] / avgdl)));
      }
    }
    return score;
  }

  static std::vector<ScoredDoc> TopK(const std::vector<double>& s, size_t k) {
    std::vector<uint32_t> idx(s.size());
    for (uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return s[a] > s[b]; });
    std::vector<ScoredDoc> out;
    for (uint32_t i : idx)
      if (out.size() < k && s[i] > 0) out.push_back({i, s[i]});
    return out;
  }
};

// Random documents over a Zipf-like vocabulary with punctuation and separators the tokenizer must handle.
std::string RandomText(std::mt19937& rng, int words, int vocab) {
  static const char* seps[] = {" ", " ", " ", "_", "-", "/", ". ", ", ", "\n", "(", ") ", "`"};
  std::string s;
  for (int i = 0; i < words; ++i) {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    int w = static_cast<int>(std::pow(vocab, u)) - 1;  // heavy head, long tail
    s += (rng() % 5 == 0 ? "W" : "w") + std::to_string(w);
    s += seps[rng() % (sizeof seps / sizeof *seps)];
  }
  return s;
}

void ExpectSameRanking(const Bm25Index& ix, const ReferenceOkapi& ref, const std::string& q, std::vector<size_t> ks) {
  const auto ref_scores = ref.Scores(q);
  for (size_t k : ks) {
    auto got = ix.TopK(q, k);
    auto want = ReferenceOkapi::TopK(ref_scores, k);
    ASSERT_EQ(got.size(), want.size()) << q;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].doc, want[i].doc) << "k " << k << " rank " << i << " query " << q;
      EXPECT_EQ(got[i].score, want[i].score) << "rank " << i;  // bit-exact
    }
  }
}

TEST(Bm25Index, ScoresEqualReferenceOnRandomCorpora) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 1 + static_cast<int>(rng() % (trial < 15 ? 4 : 300));  // tiny libraries first
    const int vocab = 5 + static_cast<int>(rng() % 400);
    std::vector<std::string> docs;
    for (int i = 0; i < n; ++i) docs.push_back(RandomText(rng, static_cast<int>(rng() % 60), vocab));
    const auto ix = Bm25Index::Build(docs);
    const ReferenceOkapi ref(docs);
    for (int qi = 0; qi < 8; ++qi) {
      std::string q = RandomText(rng, 1 + static_cast<int>(rng() % 80), vocab + 20);
      auto got = ix.Scores(q);
      auto want = ref.Scores(q);
      ASSERT_EQ(got.size(), want.size());
      for (size_t d = 0; d < got.size(); ++d) ASSERT_EQ(got[d], want[d]) << "trial " << trial << " doc " << d;
      ExpectSameRanking(ix, ref, q, {1, 3, 20, 1000});
    }
  }
}

TEST(Bm25Index, TinyLibraryFloorsNegativeIdfWithAverage) {
  // Two documents sharing "matmul": idf(matmul) = ln(0.5) - ln(2.5) < 0, the other terms ln(1.5) - ln(1.5) = 0,
  // so the average is negative and the floor 0.25 * average is negative too: nothing scores above zero.
  const std::vector<std::string> docs = {"matmul tiling", "matmul softmax"};
  const auto ix = Bm25Index::Build(docs);
  const double avg = (std::log(0.5) - std::log(2.5)) / 3;
  EXPECT_DOUBLE_EQ(ix.average_idf(), avg);
  EXPECT_EQ(ix.Idf("matmul"), 0.25 * ix.average_idf());
  EXPECT_EQ(ix.Idf("tiling"), 0.0);
  EXPECT_LT(ix.Scores("matmul")[0], 0.0);
  EXPECT_TRUE(ix.TopK("matmul tiling", 20).empty());
}

TEST(Bm25Index, RepeatedQueryTokensCountEachTime) {
  std::vector<std::string> docs = {"reduce warp shuffle", "tile shared memory", "fuse epilogue", "reduce tree order",
                                   "vectorize loads"};
  const auto ix = Bm25Index::Build(docs);
  const ReferenceOkapi ref(docs);
  const double once = ix.Score("reduce", 0);
  EXPECT_GT(once, 0);
  EXPECT_EQ(ix.Score("reduce reduce reduce", 0), once + once + once);
  ExpectSameRanking(ix, ref, "reduce reduce warp tile tile tile tile", {3});
}

TEST(Bm25Index, TiesKeepLibraryOrderAndOnlyPositiveScoresReturned) {
  std::vector<std::string> docs = {"alpha beta", "gamma", "alpha beta", "delta", "epsilon", "alpha beta", "zeta"};
  const auto ix = Bm25Index::Build(docs);
  auto top = ix.TopK("alpha", 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].doc, 0u);
  EXPECT_EQ(top[1].doc, 2u);
  EXPECT_EQ(ix.TopK("alpha", 20).size(), 3u);
  EXPECT_TRUE(ix.TopK("unknownword", 20).empty());
  EXPECT_TRUE(Bm25Index::Build({}).TopK("alpha", 5).empty());
  EXPECT_TRUE(Bm25Index::Build({"", "..."}).TopK("alpha", 5).empty());
}

TEST(Bm25Index, PruningKeepsExactTopKOnLargerCorpus) {
  // Enough documents that MaxScore pruning engages; rare query terms decide the top, common ones the order.
  std::mt19937 rng(11);
  std::vector<std::string> docs;
  for (int i = 0; i < 1500; ++i) docs.push_back(RandomText(rng, 40 + static_cast<int>(rng() % 80), 3000));
  const auto ix = Bm25Index::Build(docs);
  const ReferenceOkapi ref(docs);
  for (int qi = 0; qi < 12; ++qi) {
    std::string q = RandomText(rng, 5 + static_cast<int>(rng() % 300), 3000);
    ExpectSameRanking(ix, ref, q, {1, 5, 20});
  }
  // Short queries mixing terms stored as dense rows (w0..w2 are in most documents) with rare ones: the shape for
  // which the scan stops early and only candidates get the remaining terms.
  for (const char* q :
       {"w0 w1 w2 w1777 w2890", "w2 w2 w0 w1500 w2999 w2998 w1", "w2900 w0", "w0 w1 w2",
        "w2900 w2900 w2900 w2950 w2950 w2950 w30 w40 w50 w60 w0 w1", "w1999 w1999 w1999 w1999 w25 w35 w45 w0 w1 w2 w3"})
    ExpectSameRanking(ix, ref, q, {1, 5, 20});
}

}  // namespace
}  // namespace kgym::skills
