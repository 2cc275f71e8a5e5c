#include "train/rl_step.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "rl/returns.h"
#include "train/train_config.h"

namespace kgym::train {

namespace {

struct RowArrays {
  std::vector<int64_t> group, traj, turn;
  rl::TurnRows view() const { return {group.size(), group.data(), traj.data(), turn.data()}; }
};

RowArrays Arrays(const TrainBatch& b) {
  RowArrays a;
  for (const auto& r : b.rows) {
    a.group.push_back(r.uid);
    a.traj.push_back(r.traj);
    a.turn.push_back(r.turn);
  }
  return a;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double Std(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

double Fraction(const std::vector<uint8_t>& v, const std::vector<uint8_t>& among) {
  double n = 0, k = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (among[i]) n += 1, k += v[i] ? 1 : 0;
  return n > 0 ? k / n : 0;
}

// The token log-ratio distribution (learner minus engine) over the rows in the loss before MRS.
void MismatchMetrics(const TrainBatch& b, const std::vector<std::vector<double>>& lp, const std::vector<uint8_t>& mask,
                     nlohmann::json* m) {
  std::vector<double> abs_d;
  double kl = 0, k3 = 0, n = 0;
  for (size_t i = 0; i < b.rows.size(); ++i) {
    if (!mask[i]) continue;
    for (size_t j = 0; j < lp[i].size(); ++j) {
      const double d = lp[i][j] - b.rows[i].rollout_logprobs[j];  // log pi_train - log pi_rollout
      abs_d.push_back(std::fabs(d));
      kl += -d;                     // E_rollout[log mu - log pi]
      k3 += std::exp(d) - 1.0 - d;  // the k3 estimator of KL(mu || pi)
      n += 1;
    }
  }
  (*m)["mismatch/tokens"] = n;
  (*m)["mismatch/kl"] = n > 0 ? kl / n : 0;
  (*m)["mismatch/k3_kl"] = n > 0 ? k3 / n : 0;
  (*m)["mismatch/abs_mean"] = Mean(abs_d);
  (*m)["mismatch/abs_p50"] = Quantile(abs_d, 0.5);
  (*m)["mismatch/abs_p90"] = Quantile(abs_d, 0.9);
  (*m)["mismatch/abs_p99"] = Quantile(abs_d, 0.99);
  (*m)["mismatch/abs_max"] = abs_d.empty() ? 0 : *std::max_element(abs_d.begin(), abs_d.end());
}

Status Mrs(const TrainBatch& b, const rl::TurnRows& rows, const std::vector<std::vector<double>>& lp,
           const RlStepOptions& opt, RlStepOutcome* o) {
  const size_t nrows = b.rows.size();
  std::vector<int64_t> offsets(nrows + 1, 0);
  std::vector<double> train, engine;
  std::vector<uint8_t> tmask;
  for (size_t i = 0; i < nrows; ++i) {
    offsets[i + 1] = offsets[i] + static_cast<int64_t>(lp[i].size());
    train.insert(train.end(), lp[i].begin(), lp[i].end());
    engine.insert(engine.end(), b.rows[i].rollout_logprobs.begin(), b.rows[i].rollout_logprobs.end());
    tmask.insert(tmask.end(), lp[i].size(), o->loss_mask[i]);
  }
  rl::TokenLogProbs<double> tok{nrows, offsets.data(), train.data(), engine.data(), tmask.data(), 0};
  o->mrs_ratio.assign(nrows, 1.0);
  o->mrs_keep.assign(nrows, 1);
  if (opt.mrs_options.level == rl::MrsLevel::kToken) {
    std::vector<uint8_t> token_keep(train.size(), 0);
    Status s = rl::TokenMismatchRejection(rows, tok, opt.mrs_options, token_keep.data(), o->mrs_keep.data());
    if (!s.ok()) return s;
    for (size_t i = 0; i < nrows; ++i)
      for (int64_t j = offsets[i]; j < offsets[i + 1]; ++j) o->token_mask[i][j - offsets[i]] &= token_keep[j];
    return Status::Ok();
  }
  return rl::MismatchRejectionFromTokens(rows, tok, opt.mrs_options, o->mrs_ratio.data(), o->mrs_keep.data());
}

}  // namespace

Status RlStepOptionsFromConfig(const nlohmann::json& cfg, int64_t step, RlStepOptions* out) {
  RlStepOptions o;
  auto at = [&](const char* k) -> const nlohmann::json& { return ConfigAt(cfg, k); };
  Status s = rl::ParseEstimator(at("algorithm.adv_estimator").get<std::string>(), &o.advantage.estimator);
  if (!s.ok()) return s;
  o.advantage.gamma = at("algorithm.gamma").get<double>();
  o.mask_void_turns = at("algorithm.mask_void_turns").get<bool>();
  const auto& rs = at("algorithm.rollout_rs");
  o.mrs = !rs.is_null() && rs != "none";
  if (o.mrs) {
    s = rl::ParseMrsLevel(rs.get<std::string>(), &o.mrs_options.level);
    if (!s.ok()) return s;
  }
  o.mrs_options.lower = at("algorithm.rollout_rs_lower").get<double>();
  o.mrs_options.upper = at("algorithm.rollout_rs_upper").get<double>();
  const auto& veto = at("algorithm.rollout_token_veto_threshold");
  o.mrs_options.veto = veto.is_null() ? 0.0 : veto.get<double>();
  const auto& cov = at("algorithm.coverage_rs");
  o.prs = !cov.is_null() && cov != "none";
  if (o.prs) {
    s = rl::ParsePrsLevel(cov.get<std::string>(), &o.prs_options.level);
    if (!s.ok()) return s;
  }
  o.prs_options.threshold = at("algorithm.coverage_rs_threshold").get<double>();
  o.prs_options.factor = at("algorithm.coverage_rs_factor").get<double>();
  o.prs_options.seed =
      static_cast<uint64_t>(at("trainer.seed").get<int64_t>()) * 1000003u + static_cast<uint64_t>(step);
  o.group_filter = at("algorithm.rejection_sample").get<bool>();
  o.filter.min_group_size = 1;
  o.reward_shuffle = at("algorithm.reward_shuffle").get<bool>();
  o.shuffle_seed = o.prs_options.seed ^ 0x9e3779b97f4a7c15ull;
  *out = o;
  return Status::Ok();
}

Status RunRlStep(const TrainBatch& b, const std::vector<std::vector<double>>& lp, const RlStepOptions& opt,
                 RlStepOutcome* out) {
  const size_t n = b.rows.size();
  if (lp.size() != n) return Status::InvalidArgument("one learner log-prob list per row is needed");
  for (size_t i = 0; i < n; ++i)
    if (lp[i].size() != b.rows[i].response_ids.size())
      return Status::InvalidArgument("row " + std::to_string(i) + ": learner log-probs do not match its tokens");
  RlStepOutcome o;
  const RowArrays arr = Arrays(b);
  const rl::TurnRows rows = arr.view();
  rl::TurnLayout layout;
  Status s = rl::ValidateTurnRows(rows, b.num_groups, &layout);
  if (!s.ok()) return s;

  for (const auto& r : b.rows) o.rewards.push_back(r.reward), o.loss_mask.push_back(r.loss_mask);
  if (opt.reward_shuffle) {  // control: the same rewards, dealt out at random
    std::mt19937_64 gen(opt.shuffle_seed);
    std::shuffle(o.rewards.begin(), o.rewards.end(), gen);
  }
  const std::vector<uint8_t> real(n, 1);
  const std::vector<uint8_t> before_void = o.loss_mask;
  if (opt.mask_void_turns) {
    s = rl::MaskVoidTurns(rows, o.rewards.data(), o.loss_mask.data());
    if (!s.ok()) return s;
  }
  for (size_t i = 0; i < n; ++i) o.token_mask.emplace_back(b.rows[i].response_ids.size(), o.loss_mask[i]);
  MismatchMetrics(b, lp, o.loss_mask, &o.metrics);
  if (opt.mrs) {
    s = Mrs(b, rows, lp, opt, &o);
    if (!s.ok()) return s;
  } else {
    o.mrs_ratio.assign(n, 1.0);
    o.mrs_keep.assign(n, 1);
  }
  std::vector<uint8_t> valid(n);
  for (size_t i = 0; i < n; ++i) valid[i] = o.loss_mask[i] & o.mrs_keep[i];
  o.prs_prob.assign(n, 1.0);
  o.prs_keep.assign(n, 1);
  if (opt.prs) {
    std::vector<double> coverage, speedup;
    std::vector<uint8_t> correct;
    for (const auto& r : b.rows)
      coverage.push_back(r.coverage), speedup.push_back(r.speedup), correct.push_back(r.correct);
    rl::PrsInput in{n, coverage.data(), correct.data(), speedup.data(), valid.data(), &rows};
    s = rl::ProfilingRejection(in, opt.prs_options, o.prs_prob.data(), o.prs_keep.data());
    if (!s.ok()) return s;
  }
  o.group_keep.assign(n, 1);
  std::vector<uint8_t> groups_kept;
  if (opt.group_filter) {
    rl::GroupFilterOptions f = opt.filter;
    f.num_groups = b.num_groups;
    s = rl::ZeroVarianceGroupFilter(rows, o.rewards.data(), o.loss_mask.data(), f, &groups_kept, o.group_keep.data());
    if (!s.ok()) return s;
  }
  rl::AdvantageOptions a = opt.advantage;
  a.num_groups = b.num_groups;
  o.returns.assign(n, 0.0);
  o.advantages.assign(n, 0.0);
  s = rl::ComputeAdvantages(rows, o.rewards.data(), o.loss_mask.data(), a, o.returns.data(), o.advantages.data());
  if (!s.ok()) return s;
  o.in_loss.assign(n, 0);
  std::vector<double> rewards_in, adv_in;
  for (size_t i = 0; i < n; ++i) {
    o.in_loss[i] = o.loss_mask[i] & o.mrs_keep[i] & o.prs_keep[i] & o.group_keep[i];
    if (!o.in_loss[i]) std::fill(o.token_mask[i].begin(), o.token_mask[i].end(), 0);
    if (o.in_loss[i]) adv_in.push_back(o.advantages[i]);
  }
  std::vector<double> raw;
  for (const auto& r : b.rows) raw.push_back(r.reward);
  auto& m = o.metrics;
  m["reward/mean"] = Mean(raw);
  m["reward/std"] = Std(raw);
  m["reward/max"] = raw.empty() ? 0 : *std::max_element(raw.begin(), raw.end());
  m["reward/min"] = raw.empty() ? 0 : *std::min_element(raw.begin(), raw.end());
  m["batch/rows"] = static_cast<double>(n);
  m["batch/trajectories"] = b.trajectories;
  m["batch/failed_trajectories"] = b.failed_trajectories;
  m["mask/loss_frac"] = Fraction(o.loss_mask, real);
  m["mask/void_frac"] = 1.0 - Fraction(o.loss_mask, before_void);
  m["mrs/keep_frac"] = Fraction(o.mrs_keep, o.loss_mask);
  m["mrs/ratio_min"] = o.mrs_ratio.empty() ? 1.0 : *std::min_element(o.mrs_ratio.begin(), o.mrs_ratio.end());
  m["mrs/ratio_max"] = o.mrs_ratio.empty() ? 1.0 : *std::max_element(o.mrs_ratio.begin(), o.mrs_ratio.end());
  m["prs/keep_frac"] = Fraction(o.prs_keep, valid);
  m["prs/prob_mean"] = Mean(o.prs_prob);
  m["filter/groups_kept"] = static_cast<double>(std::count(groups_kept.begin(), groups_kept.end(), 1));
  m["filter/row_keep_frac"] = Fraction(o.group_keep, o.loss_mask);
  m["loss/rows"] = static_cast<double>(adv_in.size());
  m["adv/mean"] = Mean(adv_in);
  m["adv/std"] = Std(adv_in);
  double abs_sum = 0;
  for (double x : adv_in) abs_sum += std::fabs(x);
  m["adv/abs_mean"] = adv_in.empty() ? 0 : abs_sum / static_cast<double>(adv_in.size());
  m["returns/mean"] = Mean(o.returns);
  *out = std::move(o);
  return Status::Ok();
}

}  // namespace kgym::train
