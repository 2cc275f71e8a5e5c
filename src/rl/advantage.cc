#include "rl/advantage.h"

#include <cmath>
#include <vector>

#include "core/parallel_for.h"
#include "rl/returns.h"

namespace kgym::rl {
namespace {

inline bool Valid(const TurnRows& rows, const uint8_t* loss_mask, size_t i) {
  return (rows.turn[i] > 0) & (loss_mask == nullptr || loss_mask[i]);
}

// Leave-one-out (or plain mean) over groups of valid rows; `slot(i)` maps a valid row to its group slot.
// Branch-free per row (padding and loss-masked rows sit at random places): invalid rows go to a spare slot
// num_slots whose totals are never read. Per slot, adv = value·scale - offset with
//   leave-one-out: scale = n/(n-1), offset = (sum/n)·scale;  plain mean: scale = 1, offset = sum/n;
//   n <= 1 (baseline 0): scale = 1, offset = 0,
// the same arithmetic as value·k - (sum/n)·k and value - sum/n (x·1 and x - 0 are exact), done once per slot.
template <typename SlotFn>
void GroupBaseline(const TurnRows& rows, const uint8_t* loss_mask, const double* value, size_t num_slots, SlotFn slot,
                   bool leave_one_out, double* adv) {
  struct Totals {
    double sum = 0.0;
    int64_t count = 0;
  };
  std::vector<Totals> tot(num_slots + 1);
  for (size_t i = 0; i < rows.size; ++i) {
    const bool valid = Valid(rows, loss_mask, i);
    const size_t s = valid ? slot(i) : num_slots;
    tot[s].sum += value[i];
    ++tot[s].count;
  }
  struct Affine {
    double scale, offset;
  };
  std::vector<Affine> f(num_slots + 1);
  for (size_t s = 0; s < num_slots; ++s) {
    const int64_t n = tot[s].count;
    if (n <= 1) {
      f[s] = {1.0, 0.0};
    } else if (leave_one_out) {
      const double k = static_cast<double>(n) / static_cast<double>(n - 1);
      f[s] = {k, (tot[s].sum / static_cast<double>(n)) * k};
    } else {
      f[s] = {1.0, tot[s].sum / static_cast<double>(n)};
    }
  }
  // Rows are independent now: large batches run on a few threads.
  ParallelForRanges(EvenCuts(rows.size, size_t{1} << 17), [&](size_t, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      const bool valid = Valid(rows, loss_mask, i);
      const Affine& a = f[valid ? slot(i) : num_slots];
      const double v = value[i] * a.scale - a.offset;
      adv[i] = valid ? v : 0.0;
    }
  });
}

void ErlooNorm(const TurnRows& rows, const uint8_t* loss_mask, const double* g, size_t num_groups, double* adv) {
  std::vector<double> sum(num_groups, 0.0), m2(num_groups, 0.0), first(num_groups, 0.0), second(num_groups, 0.0);
  std::vector<int64_t> count(num_groups, 0);
  for (size_t i = 0; i < rows.size; ++i) {
    if (!Valid(rows, loss_mask, i)) continue;
    const size_t s = static_cast<size_t>(rows.group[i]);
    if (count[s] == 0) first[s] = g[i];
    if (count[s] == 1) second[s] = g[i];
    sum[s] += g[i];
    ++count[s];
  }
  for (size_t i = 0; i < rows.size; ++i) {  // centred second moment, for a stable leave-one-out variance
    if (!Valid(rows, loss_mask, i)) continue;
    const size_t s = static_cast<size_t>(rows.group[i]);
    const double d = g[i] - sum[s] / static_cast<double>(count[s]);
    m2[s] += d * d;
  }
  std::vector<int64_t> seen(num_groups, 0);
  for (size_t i = 0; i < rows.size; ++i) {
    if (!Valid(rows, loss_mask, i)) {
      adv[i] = 0.0;
      continue;
    }
    const size_t s = static_cast<size_t>(rows.group[i]);
    const int64_t n = count[s];
    if (n == 1) {
      adv[i] = g[i] / (1.0 + 1e-8);
    } else if (n == 2) {
      const double other = seen[s]++ == 0 ? second[s] : first[s];
      adv[i] = (g[i] - other) / (1.0 + 1e-8);
    } else {
      const double nd = static_cast<double>(n);
      const double mean = sum[s] / nd;
      const double loo_mean = (sum[s] - g[i]) / (nd - 1.0);
      // Removing x from a set with mean m and M2 leaves M2' = M2 - (x - m)(x - m').
      double loo_m2 = m2[s] - (g[i] - mean) * (g[i] - loo_mean);
      if (loo_m2 < 0.0) loo_m2 = 0.0;
      const double loo_std = std::sqrt(loo_m2 / (nd - 2.0));
      adv[i] = (g[i] - loo_mean) / (loo_std + 1e-8);
    }
  }
}

void Reinforce(const TurnRows& rows, const uint8_t* loss_mask, const double* g, double* adv) {
  double sum = 0.0;
  int64_t n = 0;
  for (size_t i = 0; i < rows.size; ++i) {
    if (Valid(rows, loss_mask, i)) {
      sum += g[i];
      ++n;
    }
  }
  double mean = 0.0, stdev = 1.0;
  if (n > 1) {
    mean = sum / static_cast<double>(n);
    double m2 = 0.0;
    for (size_t i = 0; i < rows.size; ++i) {
      if (Valid(rows, loss_mask, i)) m2 += (g[i] - mean) * (g[i] - mean);
    }
    stdev = std::sqrt(m2 / static_cast<double>(n - 1));
  }
  for (size_t i = 0; i < rows.size; ++i) {
    adv[i] = Valid(rows, loss_mask, i) ? (g[i] - mean) / (stdev + 1e-6) : 0.0;
  }
}

// Trajectory-level RLOO on the last real turn's (masked) reward, broadcast to the valid turns.
void TrajectoryRloo(const TurnRows& rows, const uint8_t* loss_mask, const double* rewards, size_t num_groups,
                    double* adv) {
  // Pass 1: per trajectory outcome, summed per group.
  std::vector<double> sum(num_groups, 0.0);
  std::vector<int64_t> count(num_groups, 0);
  std::vector<double> outcome;  // per trajectory, in row order
  std::vector<int64_t> traj_group;
  for (size_t i = 0; i < rows.size;) {
    size_t end = i + 1;
    while (end < rows.size && rows.traj[end] == rows.traj[i]) ++end;
    int64_t last = -1;
    for (size_t k = i; k < end; ++k) {
      if (rows.turn[k] > 0) last = static_cast<int64_t>(k);
    }
    if (last >= 0) {
      const size_t k = static_cast<size_t>(last);
      const double r = (loss_mask == nullptr || loss_mask[k]) ? rewards[k] : 0.0;
      const size_t s = static_cast<size_t>(rows.group[k]);
      sum[s] += r;
      ++count[s];
      outcome.push_back(r);
      traj_group.push_back(rows.group[k]);
    } else {
      outcome.push_back(0.0);
      traj_group.push_back(-1);
    }
    i = end;
  }
  // Pass 2: broadcast.
  size_t t = 0;
  for (size_t i = 0; i < rows.size; ++t) {
    size_t end = i + 1;
    while (end < rows.size && rows.traj[end] == rows.traj[i]) ++end;
    double a = 0.0;
    if (traj_group[t] >= 0) {
      const size_t s = static_cast<size_t>(traj_group[t]);
      const int64_t n = count[s];
      const double baseline = n > 1 ? (sum[s] - outcome[t]) / static_cast<double>(n - 1) : 0.0;
      a = outcome[t] - baseline;
    }
    for (size_t k = i; k < end; ++k) adv[k] = Valid(rows, loss_mask, k) ? a : 0.0;
    i = end;
  }
}

struct NamedEstimator {
  const char* name;
  Estimator e;
};
constexpr NamedEstimator kEstimators[] = {
    {"trloo", Estimator::kTrloo},
    {"grpo", Estimator::kGrpo},
    {"turn_independent_grpo", Estimator::kTurnIndependentGrpo},
    {"rloo", Estimator::kRloo},
    {"erloo", Estimator::kErloo},
    {"erloo_norm", Estimator::kErlooNorm},
    {"reinforce", Estimator::kReinforce},
};

}  // namespace

Status ParseEstimator(const std::string& name, Estimator* out) {
  for (const auto& ne : kEstimators) {
    if (name == ne.name) {
      *out = ne.e;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("unknown estimator '" + name +
                                 "': use trloo | grpo | turn_independent_grpo | rloo | erloo | erloo_norm | "
                                 "reinforce");
}

const char* EstimatorName(Estimator e) {
  for (const auto& ne : kEstimators) {
    if (ne.e == e) return ne.name;
  }
  return "?";
}

Status ComputeAdvantages(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask,
                         const AdvantageOptions& opt, double* returns, double* advantages) {
  if (rows.size > 0 && rows.group == nullptr) {
    return Status::InvalidArgument("advantages: group ids (uid) are required");
  }
  TurnLayout layout;
  if (Status s = detail::ReturnsAndLayout(rows, rewards, loss_mask, opt.gamma, opt.num_groups, returns, &layout);
      !s.ok()) {
    return s;
  }
  const size_t groups = static_cast<size_t>(layout.num_groups);
  const size_t turns = static_cast<size_t>(layout.max_turn);
  auto by_group = [&](size_t i) { return static_cast<size_t>(rows.group[i]); };
  auto by_group_turn = [&](size_t i) {
    return static_cast<size_t>(rows.group[i]) * turns + static_cast<size_t>(rows.turn[i] - 1);
  };
  switch (opt.estimator) {
    case Estimator::kTrloo:
      GroupBaseline(rows, loss_mask, returns, groups * turns, by_group_turn, /*leave_one_out=*/true, advantages);
      break;
    case Estimator::kGrpo:
      GroupBaseline(rows, loss_mask, returns, groups * turns, by_group_turn, false, advantages);
      break;
    case Estimator::kTurnIndependentGrpo:
      GroupBaseline(rows, loss_mask, rewards, groups, by_group, false, advantages);
      break;
    case Estimator::kErloo:
      GroupBaseline(rows, loss_mask, returns, groups, by_group, true, advantages);
      break;
    case Estimator::kErlooNorm:
      ErlooNorm(rows, loss_mask, returns, groups, advantages);
      break;
    case Estimator::kRloo:
      TrajectoryRloo(rows, loss_mask, rewards, groups, advantages);
      break;
    case Estimator::kReinforce:
      Reinforce(rows, loss_mask, returns, advantages);
      break;
  }
  return Status::Ok();
}

}  // namespace kgym::rl
