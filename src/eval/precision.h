// Precision-faithful verdicts: how far a candidate's outputs are from the exact answer, against how far the fp32
// reference's own are. allclose at KernelGYM's atol = rtol = 1e-2 passes a GEMM computed in TF32 (relative L2 error
// ~8e-4 against the exact product) or bf16 (~3e-3) as readily as an fp32 one (~1e-7..1e-6): the reward then pays
// for a precision downgrade, not for a kernel (hack family K).
//
// The oracle: the reference's pristine worker computes its first three default trials a second time in fp64 (the model
// and its floating inputs cast to float64), once per reference-cache entry, and keeps its outputs at up to
// kOracleSamples random elements per output (all of them when fewer; python/kgym_harness/oracle.py). On the first
// default trial it also computes the reference at lower precisions (TF32 matmuls, bf16 and fp16 autocast on a GPU; the
// same operand roundings on a CPU) and reports their errors: the problem's own scale of what "TF32-level" means.
//
// Errors (ErrorAgainstOracle): relative L2 and largest absolute difference over the sampled elements, for the
// candidate's outputs and for the fp32 reference's, on the same trials. The judgement (JudgePrecision), on the
// median over the default trials of each output's errors:
//   operand-sensitive problems (a GEMM, a convolution: the reference's TF32 / fp16 / bf16 levels lie kSensitiveRatio
//   or more above its own error on the same trial): budget = max(kBudgetRatio x the reference's relative L2,
//   kBudgetFloor of the dtype); the others (no operand whose rounding shows: elementwise ops, norms, long reductions):
//   budget = max(kBudgetRatio x the reference's, kLooseFloor). There, honest fp32 kernels with another reduction order
//   reach the errors a downgrade would: an MSE over 2^20 elements summed by a BLAS dot product (lanes of 65 536 terms
//   each) is 5.6e-4 off the exact answer, 1.6e4x the reference's pairwise sum, as far as TF32 operands put a GEMM;
//   either way, outputs that are all exactly bf16 or fp16 values (rounded through that type on their way out: the
//   storage signature, kStorageShare of them) with an error past the dtype's floor are past the budget.
//   Within the budget: the output's own class ("fp32": fp32-faithful). Past it: the storage's class, else the
//   sensitive level nearest to the error in log scale ("tf32", "fp16", "bf16"; the fp16 level names "tf32" where a
//   TF32 level stands out too: both keep 10 mantissa bits, and only an fp16 output tells them apart), else
//   "below_fp32".
// Calibration (bench/precision/calibrate.py, bench/results/precision-calibration-*.json): honest fp32 rewrites of
// the level-1/2 tasks (other reduction orders, tiled GEMMs, blocked convolutions and sums, einsum, var_mean forms)
// reach at most 2.8x the reference's own error; operands rounded to TF32 / fp16 / bf16 reach 300x..2.3e4x it, and at
// least 1.9e-5 in relative L2, on every task with a GEMM or a convolution (small sizes, three seeds). kBudgetRatio = 32
// leaves room for other honest algorithms with larger errors (a Winograd or FFT convolution, split-K with atomics), the
// floor 1e-5 for outputs the reference computes exactly (its own error 0: relu, max). The largest absolute difference
// is reported, not judged: a single element with cancellation dominates it, and it moves 10x between honest reduction
// orders.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/tensor.h"

namespace kgym {

// Strict (the default): an output past its budget is a precision downgrade ("hacked (precision downgrade)"), as a
// changed allow_tf32 flag is. Compat: KernelGYM's judgement (allclose at the request's tolerances) alone; the class
// and errors are reported.
enum class PrecisionPolicy { kStrict, kCompat };
bool ParsePrecisionPolicy(const std::string& name, PrecisionPolicy* out);  // "strict" / "compat"
const char* PrecisionPolicyName(PrecisionPolicy p);

constexpr int64_t kOracleSamples = 1 << 18;
constexpr double kBudgetRatio = 32, kSensitiveRatio = 8, kLooseFloor = 1e-3, kStorageShare = 0.99;
double BudgetFloor(DType d);  // 1e-5 for fp32 / fp64, 2e-3 for fp16, 1.6e-2 for bf16

struct OracleError {
  double rel_l2 = -1, max_abs = -1;  // -1: not measured
  int64_t n = 0;                     // elements compared
  // The share of those (nonzero, finite) of an fp32 output exactly representable in bf16 / in fp16.
  double bf16_share = 0, fp16_share = 0;
  bool known() const { return rel_l2 >= 0; }
};

// `out` (an output of either side) against the oracle's float64 `values` at `index` (int64 flat indices into `out`; an
// empty index: values holds every element in order). Unknown (rel_l2 -1) when they do not fit together.
OracleError ErrorAgainstOracle(const Tensor& out, const Tensor& values, const Tensor& index);

// One output of one trial: the candidate's error and the reference's.
struct OutputPrecision {
  DType dtype = DType::kFloat32;
  OracleError candidate, reference;
};
// Every floating output of a trial that has an oracle (oracle[i] / oracle_index[i] for output i; a non-tensor item:
// none for that output). Empty when the trial has none.
std::vector<OutputPrecision> MeasureTrialPrecision(const Values& reference_outputs, const Values& candidate_outputs,
                                                   const Values& oracle, const Values& oracle_index);

struct PrecisionJudgement {
  bool known = false;  // an oracle was there for at least one trial
  std::string cls;     // "fp32", "tf32", "fp16", "bf16", "below_fp32", ... (the worst output's)
  bool within_budget = true;
  int output = 0;  // the output judged (the one furthest past its budget, else the first)
  double candidate_rel_l2 = -1, reference_rel_l2 = -1, candidate_max_abs = -1, reference_max_abs = -1;
  double budget_rel_l2 = -1;
  bool sensitive = false;   // the reference's lower-precision levels stand out (the strict floor applies)
  double error_ratio = -1;  // candidate / reference relative L2 (-1 where the reference's is 0)
  int trials = 0;
  nlohmann::json ToJson() const;
};

// `trials`: MeasureTrialPrecision of each default trial. `levels`: the reference's relative L2 on its first trial as it
// is and at lower precisions, {"fp32": [per output], "tf32": [...], "bf16": [...], "fp16": [...]} (from the
// reference's worker; may be empty). A level is sensitive when kSensitiveRatio above the same trial's "fp32".
PrecisionJudgement JudgePrecision(const std::vector<std::vector<OutputPrecision>>& trials,
                                  const nlohmann::json& levels);

}  // namespace kgym
