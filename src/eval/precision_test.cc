#include "eval/precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "eval/hack_rules.h"

namespace kgym {
namespace {

template <typename T>
Tensor Make(DType d, const std::vector<T>& v) {
  Tensor t;
  t.dtype = d;
  t.shape = {static_cast<int64_t>(v.size())};
  std::string b(v.size() * sizeof(T), '\0');
  std::memcpy(b.data(), v.data(), b.size());
  t.SetBytes(std::move(b));
  return t;
}
Tensor F32(const std::vector<float>& v) { return Make(DType::kFloat32, v); }
Tensor F64(const std::vector<double>& v) { return Make(DType::kFloat64, v); }
Tensor I64(const std::vector<int64_t>& v) { return Make(DType::kInt64, v); }
Value V(Tensor t) {
  Value v;
  v.is_tensor = true;
  v.tensor = std::move(t);
  return v;
}

float Bf16(float x) {  // rounded to nearest even through bfloat16
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

TEST(PrecisionTest, ErrorOverEveryElementOrTheSampledOnes) {
  const Tensor oracle = F64({1.0, -2.0, 3.0, 4.0});
  const Tensor out = F32({1.0f, -2.0f, 3.0f, 4.5f});
  OracleError all = ErrorAgainstOracle(out, oracle, I64({}));
  EXPECT_EQ(all.n, 4);
  EXPECT_NEAR(all.rel_l2, 0.5 / std::sqrt(30.0), 1e-12);
  EXPECT_DOUBLE_EQ(all.max_abs, 0.5);
  // The oracle at elements 0 and 3 only (its values there).
  OracleError some = ErrorAgainstOracle(out, F64({1.0, 4.0}), I64({0, 3}));
  EXPECT_EQ(some.n, 2);
  EXPECT_NEAR(some.rel_l2, 0.5 / std::sqrt(17.0), 1e-12);
  // What does not fit together is not measured.
  EXPECT_FALSE(ErrorAgainstOracle(out, F64({1.0}), I64({})).known());         // count differs
  EXPECT_FALSE(ErrorAgainstOracle(out, F64({1.0}), I64({7})).known());        // index outside
  EXPECT_FALSE(ErrorAgainstOracle(out, F32({1, 2, 3, 4}), I64({})).known());  // the oracle is fp64
}

TEST(PrecisionTest, StorageSignatureOfValuesStoredThroughBf16) {
  std::vector<float> plain, through;
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0, 1);
  std::vector<double> exact;
  for (int i = 0; i < 1000; ++i) {
    const float x = n(rng);
    plain.push_back(x);
    through.push_back(Bf16(x));
    exact.push_back(x);
  }
  const OracleError p = ErrorAgainstOracle(F32(plain), F64(exact), I64({}));
  const OracleError b = ErrorAgainstOracle(F32(through), F64(exact), I64({}));
  EXPECT_LT(p.bf16_share, 0.05);
  EXPECT_GE(b.bf16_share, 0.99);
  EXPECT_GE(b.fp16_share, 0.9);  // bf16 values are fp16 values too where fp16 reaches
  EXPECT_EQ(p.rel_l2, 0);
  EXPECT_GT(b.rel_l2, 1e-3);
}

std::vector<OutputPrecision> One(double cand, double ref, DType d = DType::kFloat32) {
  OutputPrecision p;
  p.dtype = d;
  p.candidate.rel_l2 = cand;
  p.candidate.max_abs = cand * 10;
  p.reference.rel_l2 = ref;
  p.reference.max_abs = ref * 10;
  return {p};
}

TEST(PrecisionTest, HonestReorderingsStayWithinTheBudget) {
  // The fp32 reference's own error 1.6e-6 (the GEMM): an honest kernel with another order is 0.5-3x that.
  PrecisionJudgement j = JudgePrecision({One(2.8e-6, 1.6e-6), One(4e-6, 1.5e-6), One(1e-6, 1.7e-6)}, {});
  ASSERT_TRUE(j.known);
  EXPECT_TRUE(j.within_budget);
  EXPECT_EQ(j.cls, "fp32");
  EXPECT_EQ(j.trials, 3);
  EXPECT_NEAR(j.error_ratio, 2.8e-6 / 1.6e-6, 1e-9);  // medians over the trials
  EXPECT_DOUBLE_EQ(j.budget_rel_l2, kLooseFloor);     // no levels: nothing says a downgrade would show
  const nlohmann::json levels = {{"tf32", {7.0e-4}}, {"bf16", {2.6e-3}}};
  EXPECT_DOUBLE_EQ(JudgePrecision({One(2.8e-6, 1.6e-6)}, levels).budget_rel_l2, kBudgetRatio * 1.6e-6);
  EXPECT_FALSE(PrecisionDowngradeRule(j, PrecisionPolicy::kStrict));
  // An exact reference (relu: its own error 0): the floor is the budget.
  PrecisionJudgement exact = JudgePrecision({One(3e-8, 0)}, {{"tf32", {0.0}}});
  EXPECT_TRUE(exact.within_budget);
  EXPECT_EQ(exact.error_ratio, -1);
}

TEST(PrecisionTest, Tf32AndBf16AreClassedByTheReferencesOwnLevels) {
  const nlohmann::json levels = {{"tf32", {7.0e-4}}, {"fp16", {3.0e-4}}, {"bf16", {2.6e-3}}};
  PrecisionJudgement tf32 = JudgePrecision({One(7.6e-4, 1.6e-6)}, levels);
  EXPECT_FALSE(tf32.within_budget);
  EXPECT_EQ(tf32.cls, "tf32");
  EXPECT_NEAR(tf32.error_ratio, 475, 1);
  PrecisionJudgement bf16 = JudgePrecision({One(2.8e-3, 1.6e-6)}, levels);
  EXPECT_EQ(bf16.cls, "bf16");
  // Nearer the fp16 level than the TF32 one (H100: Triton's TF32 tl.dot against cuBLAS's TF32), output not stored
  // as fp16: 10-bit operands with an fp32 output, TF32-level; stored as fp16, fp16-level.
  const nlohmann::json h100 = {{"tf32", {2.1e-4}}, {"fp16", {8.0e-4}}, {"bf16", {2.6e-3}}};
  EXPECT_EQ(JudgePrecision({One(7.6e-4, 1.6e-6)}, h100).cls, "tf32");
  std::vector<OutputPrecision> stored = One(7.6e-4, 1.6e-6);
  stored[0].candidate.fp16_share = 1.0;
  EXPECT_EQ(JudgePrecision({stored}, h100).cls, "fp16");
  // No TF32 level (a problem whose matmuls TF32 does not touch): the fp16 level still classes.
  EXPECT_EQ(JudgePrecision({One(7.6e-4, 1.6e-6)}, {{"fp16", {8.0e-4}}, {"bf16", {2.6e-3}}}).cls, "fp16");
  // Levels that do not stand out (no GEMM in the problem): the loose floor, and past it, with no storage signature,
  // "below_fp32".
  const nlohmann::json flat = {{"tf32", {1.7e-6}}, {"fp16", {1.6e-6}}, {"bf16", {1.6e-6}}};
  EXPECT_EQ(JudgePrecision({One(7.6e-4, 1.6e-6)}, flat).cls, "fp32");
  EXPECT_EQ(JudgePrecision({One(4e-3, 1.6e-6)}, flat).cls, "below_fp32");
  // Strict flags it as the flag path would; compat only reports.
  auto v = PrecisionDowngradeRule(tf32, PrecisionPolicy::kStrict);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->outcome, Outcome::kHacked);
  EXPECT_NE(v->detail.find("hacked (precision downgrade)"), std::string::npos) << v->detail;
  EXPECT_NE(v->detail.find("TF32-level"), std::string::npos) << v->detail;
  EXPECT_FALSE(PrecisionDowngradeRule(tf32, PrecisionPolicy::kCompat));
  EXPECT_FALSE(PrecisionDowngradeRule(PrecisionJudgement{}, PrecisionPolicy::kStrict));  // no oracle: nothing judged
}

// A long reduction with no operand to round (an MSE over 2^20 elements): an honest fp32 dot product is 5.6e-4 off the
// exact answer, 1.6e4x the reference's pairwise sum. Not a downgrade: the loose floor applies.
TEST(PrecisionTest, LongReductionsWithoutOperandLevelsGetTheLooseFloor) {
  // Its first trial's own error is 1.5e-7 (the median of the trials 3.5e-8): the levels are judged against that one.
  const nlohmann::json levels = {{"fp32", {1.5e-7}}, {"tf32", {1.5e-7}}, {"fp16", {1.5e-7}}, {"bf16", {1.6e-7}}};
  PrecisionJudgement j = JudgePrecision({One(5.6e-4, 3.5e-8)}, levels);
  EXPECT_TRUE(j.within_budget);
  EXPECT_FALSE(j.sensitive);
  EXPECT_DOUBLE_EQ(j.budget_rel_l2, kLooseFloor);
  EXPECT_EQ(j.cls, "fp32");
}

// Outputs stored through bf16 are a downgrade wherever their error passes fp32's floor, loose budget or not.
TEST(PrecisionTest, OutputsStoredThroughBf16AreADowngrade) {
  std::vector<OutputPrecision> t = One(4e-4, 3e-8);
  t[0].candidate.bf16_share = 1.0;
  t[0].candidate.fp16_share = 0.97;
  PrecisionJudgement j = JudgePrecision({t}, {});
  EXPECT_FALSE(j.within_budget);
  EXPECT_EQ(j.cls, "bf16");
  t[0].candidate.rel_l2 = 1e-7;  // exact values that happen to be bf16 values (small integers): not judged
  EXPECT_TRUE(JudgePrecision({t}, {}).within_budget);
}

TEST(PrecisionTest, TheOutputFurthestPastItsBudgetIsJudged) {
  std::vector<OutputPrecision> two = One(1e-6, 1e-6);
  two.push_back(One(5e-3, 1e-6)[0]);
  PrecisionJudgement j = JudgePrecision({two}, {});
  EXPECT_EQ(j.output, 1);
  EXPECT_FALSE(j.within_budget);
  EXPECT_EQ(j.ToJson()["output"], 1);
}

TEST(PrecisionTest, HalfOutputsHaveTheirOwnFloor) {
  // An fp16 problem: its reference's own error is fp16's; a candidate at that level is the problem's own class.
  PrecisionJudgement j = JudgePrecision({One(4e-4, 3e-4, DType::kFloat16)}, {});
  EXPECT_TRUE(j.within_budget);
  EXPECT_EQ(j.cls, "fp16");
}

TEST(PrecisionTest, MeasuresEveryFloatingOutputWithAnOracle) {
  Values ref = {V(F32({1, 2})), Value{}}, cand = {V(F32({1, 2.5f})), Value{}};
  ref[1].json = 3;
  cand[1].json = 3;
  Values oracle = {V(F64({1, 2})), Value{}}, index = {V(I64({})), Value{}};
  auto m = MeasureTrialPrecision(ref, cand, oracle, index);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].reference.rel_l2, 0);
  EXPECT_GT(m[0].candidate.rel_l2, 0.2);
  EXPECT_TRUE(MeasureTrialPrecision(ref, cand, {}, {}).empty());
}

TEST(PrecisionTest, PolicyNames) {
  PrecisionPolicy p;
  EXPECT_TRUE(ParsePrecisionPolicy("compat", &p));
  EXPECT_EQ(p, PrecisionPolicy::kCompat);
  EXPECT_TRUE(ParsePrecisionPolicy("strict", &p));
  EXPECT_STREQ(PrecisionPolicyName(p), "strict");
  EXPECT_FALSE(ParsePrecisionPolicy("", &p));
}

}  // namespace
}  // namespace kgym
