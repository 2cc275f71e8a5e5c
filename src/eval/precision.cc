#include "eval/precision.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "eval/timing_stats.h"

namespace kgym {

bool ParsePrecisionPolicy(const std::string& name, PrecisionPolicy* out) {
  if (name == "strict") {
    *out = PrecisionPolicy::kStrict;
    return true;
  }
  if (name == "compat") {
    *out = PrecisionPolicy::kCompat;
    return true;
  }
  return false;
}

const char* PrecisionPolicyName(PrecisionPolicy p) { return p == PrecisionPolicy::kStrict ? "strict" : "compat"; }

double BudgetFloor(DType d) {
  switch (d) {
    case DType::kFloat16:
      return 2e-3;
    case DType::kBFloat16:
      return 1.6e-2;
    default:
      return 1e-5;
  }
}

namespace {

const char* OwnClass(DType d) {
  switch (d) {
    case DType::kFloat16:
      return "fp16";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat64:
      return "fp64";
    default:
      return "fp32";
  }
}

// An fp32 value whose low 16 (bf16) or 13 (fp16, within its normal range) mantissa bits are zero.
void StorageOf(double v, DType d, int64_t* bf16, int64_t* fp16) {
  if (d != DType::kFloat32) return;
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  *bf16 += (u & 0xFFFFu) == 0;
  const float a = std::fabs(f);
  *fp16 += (u & 0x1FFFu) == 0 && a >= 6.103515625e-05f && a <= 65504.0f;
}

}  // namespace

OracleError ErrorAgainstOracle(const Tensor& out, const Tensor& values, const Tensor& index) {
  OracleError e;
  if (!IsFloating(out.dtype) || values.dtype != DType::kFloat64) return e;
  const int64_t numel = out.numel(), n = values.numel();
  const bool all = index.numel() == 0;
  if (all ? n != numel : (index.dtype != DType::kInt64 || index.numel() != n)) return e;
  double sq_diff = 0, sq_ref = 0, max_abs = 0;
  int64_t bf16 = 0, fp16 = 0, nonzero = 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t i = k;
    if (!all) {
      std::memcpy(&i, index.data() + k * 8, 8);
      if (i < 0 || i >= numel) return OracleError{};
    }
    double g;
    std::memcpy(&g, values.data() + k * 8, 8);
    const double x = out.At(i);
    if (!std::isfinite(g) || !std::isfinite(x)) continue;  // non-finite values are the comparison's business
    const double d = x - g;
    sq_diff += d * d;
    sq_ref += g * g;
    max_abs = std::max(max_abs, std::fabs(d));
    if (x != 0) {
      ++nonzero;
      StorageOf(x, out.dtype, &bf16, &fp16);
    }
    ++e.n;
  }
  e.rel_l2 = sq_ref > 0 ? std::sqrt(sq_diff / sq_ref) : std::sqrt(sq_diff);
  e.max_abs = max_abs;
  if (nonzero > 0) {
    e.bf16_share = static_cast<double>(bf16) / nonzero;
    e.fp16_share = static_cast<double>(fp16) / nonzero;
  }
  return e;
}

std::vector<OutputPrecision> MeasureTrialPrecision(const Values& reference_outputs, const Values& candidate_outputs,
                                                   const Values& oracle, const Values& oracle_index) {
  std::vector<OutputPrecision> out;
  const size_t n = std::min({reference_outputs.size(), candidate_outputs.size(), oracle.size(), oracle_index.size()});
  for (size_t i = 0; i < n; ++i) {
    const Value &r = reference_outputs[i], &c = candidate_outputs[i], &o = oracle[i], &ix = oracle_index[i];
    if (!r.is_tensor || !c.is_tensor || !o.is_tensor || !ix.is_tensor || !IsFloating(r.tensor.dtype)) continue;
    OutputPrecision p;
    p.dtype = r.tensor.dtype;
    p.reference = ErrorAgainstOracle(r.tensor, o.tensor, ix.tensor);
    p.candidate = ErrorAgainstOracle(c.tensor, o.tensor, ix.tensor);
    if (p.reference.known() && p.candidate.known()) out.push_back(p);
  }
  return out;
}

namespace {

// Level `name` of output `output` (-1 where it is not there).
double Level(const nlohmann::json& levels, const char* name, int output) {
  if (!levels.is_object()) return -1;
  const auto it = levels.find(name);
  if (it == levels.end() || !it->is_array() || static_cast<int>(it->size()) <= output) return -1;
  const auto& v = (*it)[output];
  return v.is_number() ? v.get<double>() : -1;
}

// The reference's lower-precision levels of output `output` that a downgrade would show in: those at least
// kSensitiveRatio above its own fp32 error on the same trial (its "fp32" level; `ref` where that is missing).
std::map<std::string, double> SensitiveLevels(const nlohmann::json& levels, int output, double ref) {
  std::map<std::string, double> out;
  const double own = Level(levels, "fp32", output);
  const double base = std::max(own >= 0 ? own : ref, 1e-12);
  for (const char* name : {"tf32", "fp16", "bf16"})
    if (const double v = Level(levels, name, output); v > kSensitiveRatio * base) out[name] = v;
  return out;
}

// The class of an output past its budget: what its storage shows, else the sensitive level of the reference nearest
// to its error (log scale), else "below_<own>". The fp16 level (autocast) is TF32's operand rounding (both keep 10
// mantissa bits) plus an fp16 output: for an output not stored as fp16 it is a second measure of the TF32 level where
// that stands out too (a Triton tl.dot in TF32 lay nearest the fp16 level on an H100 and was called fp16).
std::string ClassPastBudget(double err, double bf16_share, double fp16_share, DType d,
                            const std::map<std::string, double>& levels) {
  if (d == DType::kFloat32 && bf16_share >= kStorageShare) return "bf16";
  if (d == DType::kFloat32 && fp16_share >= kStorageShare) return "fp16";
  std::string best;
  double best_d = 1e300;
  for (const auto& [name, level] : levels) {
    const double dist = err > 0 ? std::fabs(std::log(err / level)) : 1e300;
    if (dist < best_d) {
      best_d = dist;
      best = name == "fp16" && levels.count("tf32") ? "tf32" : name;
    }
  }
  return best.empty() ? std::string("below_") + OwnClass(d) : best;
}

}  // namespace

PrecisionJudgement JudgePrecision(const std::vector<std::vector<OutputPrecision>>& trials,
                                  const nlohmann::json& levels) {
  PrecisionJudgement j;
  size_t outputs = 0;
  for (const auto& t : trials) outputs = std::max(outputs, t.size());
  double worst = -1;
  for (size_t o = 0; o < outputs; ++o) {
    std::vector<double> c_l2, r_l2, c_max, r_max, bf16, fp16;
    DType d = DType::kFloat32;
    int n = 0;
    for (const auto& t : trials) {
      if (o >= t.size()) continue;
      d = t[o].dtype;
      c_l2.push_back(t[o].candidate.rel_l2);
      r_l2.push_back(t[o].reference.rel_l2);
      c_max.push_back(t[o].candidate.max_abs);
      r_max.push_back(t[o].reference.max_abs);
      bf16.push_back(t[o].candidate.bf16_share);
      fp16.push_back(t[o].candidate.fp16_share);
      ++n;
    }
    if (n == 0) continue;
    const double cand = Median(c_l2), ref = Median(r_l2);
    const std::map<std::string, double> sensitive = SensitiveLevels(levels, static_cast<int>(o), ref);
    const double floor = sensitive.empty() ? std::max(kLooseFloor, BudgetFloor(d)) : BudgetFloor(d);
    const double budget = std::max(kBudgetRatio * ref, floor);
    // Outputs rounded through bf16 / fp16 on their way out, with an error past what fp32 allows.
    const double bf16_share = Median(bf16), fp16_share = Median(fp16);
    const bool stored_half =
        d == DType::kFloat32 && std::max(bf16_share, fp16_share) >= kStorageShare && cand > BudgetFloor(d);
    const double excess = stored_half ? std::max(cand / budget, 1.0 + 1e-9) : cand / budget;
    if (excess <= worst) continue;
    worst = excess;
    j.known = true;
    j.output = static_cast<int>(o);
    j.trials = n;
    j.candidate_rel_l2 = cand;
    j.reference_rel_l2 = ref;
    j.candidate_max_abs = Median(c_max);
    j.reference_max_abs = Median(r_max);
    j.budget_rel_l2 = budget;
    j.error_ratio = ref > 0 ? cand / ref : -1;
    j.sensitive = !sensitive.empty();
    j.within_budget = cand <= budget && !stored_half;
    j.cls = j.within_budget ? OwnClass(d) : ClassPastBudget(cand, bf16_share, fp16_share, d, sensitive);
  }
  return j;
}

nlohmann::json PrecisionJudgement::ToJson() const {
  if (!known) return {{"class", "unknown"}};
  nlohmann::json j = {{"class", cls},
                      {"within_budget", within_budget},
                      {"candidate_rel_l2", candidate_rel_l2},
                      {"reference_rel_l2", reference_rel_l2},
                      {"candidate_max_abs", candidate_max_abs},
                      {"reference_max_abs", reference_max_abs},
                      {"budget_rel_l2", budget_rel_l2},
                      {"operand_sensitive", sensitive},
                      {"trials", trials}};
  j["error_ratio"] = error_ratio >= 0 ? nlohmann::json(error_ratio) : nlohmann::json(nullptr);
  if (output > 0) j["output"] = output;
  return j;
}

}  // namespace kgym
