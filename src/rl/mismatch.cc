#include "rl/mismatch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace kgym::rl {
namespace {

constexpr double kLogClamp = 20.0;

inline double ClampedExp(double log_w) { return std::exp(std::clamp(log_w, -kLogClamp, kLogClamp)); }

template <typename T>
Status CheckTokens(const TokenLogProbs<T>& tokens) {
  if (tokens.rows == 0) return Status::Ok();
  if (tokens.offsets == nullptr || tokens.logp_train == nullptr || tokens.logp_rollout == nullptr) {
    return Status::InvalidArgument("mrs: offsets, logp_train and logp_rollout are required");
  }
  if (tokens.offsets[0] != 0) return Status::InvalidArgument("mrs: offsets[0] must be 0");
  for (size_t i = 0; i < tokens.rows; ++i) {
    if (tokens.offsets[i + 1] < tokens.offsets[i]) {
      return Status::InvalidArgument("mrs: offsets decrease at row " + std::to_string(i));
    }
  }
  return Status::Ok();
}

inline bool Vetoed(const RowLogRatio& s, double log_veto) { return s.count > 0 && s.min < log_veto; }

}  // namespace

Status ParseMrsLevel(const std::string& name, MrsLevel* out) {
  if (name == "geometric") *out = MrsLevel::kGeometric;
  else if (name == "token") *out = MrsLevel::kToken;
  else if (name == "turn") *out = MrsLevel::kTurn;
  else if (name == "turn_geo") *out = MrsLevel::kTurnGeo;
  else if (name == "sequence") *out = MrsLevel::kSequence;
  else return Status::InvalidArgument("unknown MRS level '" + name + "': use geometric | token | turn | turn_geo | sequence");
  return Status::Ok();
}

namespace {

template <typename T>
inline RowLogRatio SummarizeRow(const TokenLogProbs<T>& tokens, size_t i) {
  const T* a = tokens.logp_train;
  const T* b = tokens.logp_rollout;
  const uint8_t* m = tokens.token_mask;
  const int64_t begin = tokens.offsets[i], end = tokens.offsets[i + 1];
  double sum = 0.0, mn = std::numeric_limits<double>::infinity();
  int64_t n = 0;
  if (m == nullptr) {
    for (int64_t j = begin; j < end; ++j) {
      const double lr = static_cast<double>(a[j]) - static_cast<double>(b[j]);
      sum += lr;
      mn = lr < mn ? lr : mn;
    }
    n = end - begin;
  } else {
    for (int64_t j = begin; j < end; ++j) {  // branch-free: masked tokens add 0 and leave the minimum alone
      const double lr = static_cast<double>(a[j]) - static_cast<double>(b[j]);
      const bool v = m[j] != 0;
      sum += v ? lr : 0.0;
      mn = (v && lr < mn) ? lr : mn;
      n += v;
    }
  }
  return {sum, n, mn};
}

// Ratio and keep for the rows [begin, end) of one trajectory; stats[k - begin] summarises row k.
void DecideTrajectory(const TurnRows& rows, size_t begin, size_t end, const RowLogRatio* stats,
                      const MrsOptions& opt, double log_veto, double* ratio, uint8_t* keep) {
  double traj_sum = 0.0;
  int64_t traj_count = 0;
  bool traj_vetoed = false;
  for (size_t k = begin; k < end; ++k) {
    if (rows.turn[k] <= 0) continue;
    const RowLogRatio& s = stats[k - begin];
    traj_sum += s.sum;
    traj_count += s.count;
    traj_vetoed = traj_vetoed || Vetoed(s, log_veto);
  }
  for (size_t k = begin; k < end; ++k) {
    if (rows.turn[k] <= 0) {
      ratio[k] = 1.0;
      keep[k] = 1;
      continue;
    }
    const RowLogRatio& s = stats[k - begin];
    double log_w = 0.0;
    switch (opt.level) {
      case MrsLevel::kGeometric:
        log_w = traj_count > 0 ? traj_sum / static_cast<double>(traj_count) : 0.0;
        break;
      case MrsLevel::kSequence:
        log_w = traj_sum;
        break;
      case MrsLevel::kTurn:
        log_w = s.sum;
        break;
      case MrsLevel::kTurnGeo:
        log_w = s.count > 0 ? s.sum / static_cast<double>(s.count) : 0.0;
        break;
      case MrsLevel::kToken:
        break;
    }
    const double w = ClampedExp(log_w);
    const bool vetoed = opt.veto_scope == VetoScope::kTrajectory ? traj_vetoed : Vetoed(s, log_veto);
    ratio[k] = w;
    keep[k] = (w >= opt.lower && w <= opt.upper && !vetoed) ? 1 : 0;
  }
}

inline double LogVeto(const MrsOptions& opt) {
  return opt.veto > 0 ? std::log(opt.veto) : -std::numeric_limits<double>::infinity();
}

}  // namespace

template <typename T>
Status SummarizeLogRatios(const TokenLogProbs<T>& tokens, RowLogRatio* out) {
  if (Status s = CheckTokens(tokens); !s.ok()) return s;
  for (size_t i = 0; i < tokens.rows; ++i) out[i] = SummarizeRow(tokens, i);
  return Status::Ok();
}

template <typename T>
Status MismatchRejectionFromTokens(const TurnRows& rows, const TokenLogProbs<T>& tokens, const MrsOptions& opt,
                                   double* ratio, uint8_t* keep) {
  if (opt.level == MrsLevel::kToken) {
    return Status::InvalidArgument("mrs: the token level is TokenMismatchRejection");
  }
  if (Status s = CheckTokens(tokens); !s.ok()) return s;
  if (rows.size != tokens.rows) return Status::InvalidArgument("mrs: rows and token rows differ in number");
  if (Status s = ValidateTurnRows(rows, 0, nullptr); !s.ok()) return s;
  const double log_veto = LogVeto(opt);
  // Trajectories are independent: large batches are split at trajectory boundaries over a few threads (every row
  // is computed exactly as in one thread, so the result does not depend on the split).
  auto run = [&](size_t from, size_t to) {
    std::vector<RowLogRatio> buf;
    for (size_t i = from; i < to;) {
      size_t end = i + 1;
      while (end < to && rows.traj[end] == rows.traj[i]) ++end;
      buf.resize(end - i);
      for (size_t k = i; k < end; ++k) buf[k - i] = SummarizeRow(tokens, k);
      DecideTrajectory(rows, i, end, buf.data(), opt, log_veto, ratio, keep);
      i = end;
    }
  };
  const size_t kMinRowsPerThread = size_t{1} << 16;
  const size_t threads = std::min<size_t>({std::max(1u, std::thread::hardware_concurrency()), size_t{8},
                                           std::max<size_t>(1, rows.size / kMinRowsPerThread)});
  if (threads <= 1) {
    run(0, rows.size);
    return Status::Ok();
  }
  std::vector<size_t> cut = {0};
  for (size_t t = 1; t < threads; ++t) {
    size_t c = std::max(cut.back(), rows.size * t / threads);
    while (c > 0 && c < rows.size && rows.traj[c] == rows.traj[c - 1]) ++c;  // never split a trajectory
    cut.push_back(c);
  }
  cut.push_back(rows.size);
  std::vector<std::thread> pool;
  for (size_t t = 0; t + 1 < cut.size(); ++t)
    if (cut[t] < cut[t + 1]) pool.emplace_back(run, cut[t], cut[t + 1]);
  for (auto& th : pool) th.join();
  return Status::Ok();
}

Status MismatchRejection(const TurnRows& rows, const RowLogRatio* stats, const MrsOptions& opt, double* ratio,
                         uint8_t* keep) {
  if (opt.level == MrsLevel::kToken) {
    return Status::InvalidArgument("mrs: the token level needs the tokens (TokenMismatchRejection)");
  }
  if (Status s = ValidateTurnRows(rows, 0, nullptr); !s.ok()) return s;
  const double log_veto = LogVeto(opt);
  for (size_t i = 0; i < rows.size;) {
    size_t end = i + 1;
    while (end < rows.size && rows.traj[end] == rows.traj[i]) ++end;
    DecideTrajectory(rows, i, end, stats + i, opt, log_veto, ratio, keep);
    i = end;
  }
  return Status::Ok();
}

template <typename T>
Status TokenMismatchRejection(const TurnRows& rows, const TokenLogProbs<T>& tokens, const MrsOptions& opt,
                              uint8_t* token_keep, uint8_t* row_keep) {
  if (Status s = CheckTokens(tokens); !s.ok()) return s;
  if (rows.size != tokens.rows) return Status::InvalidArgument("mrs: rows and token rows differ in number");
  if (Status s = ValidateTurnRows(rows, 0, nullptr); !s.ok()) return s;
  const double log_veto = opt.veto > 0 ? std::log(opt.veto) : -std::numeric_limits<double>::infinity();
  const uint8_t* m = tokens.token_mask;
  std::vector<uint8_t> vetoed(tokens.rows, 0);
  for (size_t i = 0; i < tokens.rows; ++i) {
    for (int64_t j = tokens.offsets[i]; j < tokens.offsets[i + 1]; ++j) {
      if (m != nullptr && !m[j]) continue;
      if (static_cast<double>(tokens.logp_train[j]) - static_cast<double>(tokens.logp_rollout[j]) < log_veto) {
        vetoed[i] = 1;
        break;
      }
    }
  }
  if (opt.veto_scope == VetoScope::kTrajectory) {
    for (size_t i = 0; i < rows.size;) {
      size_t end = i + 1;
      while (end < rows.size && rows.traj[end] == rows.traj[i]) ++end;
      uint8_t any = 0;
      for (size_t k = i; k < end; ++k) any |= vetoed[k];
      for (size_t k = i; k < end; ++k) vetoed[k] = any;
      i = end;
    }
  }
  for (size_t i = 0; i < tokens.rows; ++i) {
    uint8_t any = 0;
    for (int64_t j = tokens.offsets[i]; j < tokens.offsets[i + 1]; ++j) {
      const bool valid = (m == nullptr || m[j]) && rows.turn[i] > 0;
      const double w =
          ClampedExp(static_cast<double>(tokens.logp_train[j]) - static_cast<double>(tokens.logp_rollout[j]));
      const uint8_t k = (valid && !vetoed[i] && w >= opt.lower && w <= opt.upper) ? 1 : 0;
      token_keep[j] = k;
      any |= k;
    }
    row_keep[i] = any;
  }
  return Status::Ok();
}

template Status SummarizeLogRatios<float>(const TokenLogProbs<float>&, RowLogRatio*);
template Status SummarizeLogRatios<double>(const TokenLogProbs<double>&, RowLogRatio*);
template Status MismatchRejectionFromTokens<float>(const TurnRows&, const TokenLogProbs<float>&, const MrsOptions&,
                                                   double*, uint8_t*);
template Status MismatchRejectionFromTokens<double>(const TurnRows&, const TokenLogProbs<double>&,
                                                    const MrsOptions&, double*, uint8_t*);
template Status TokenMismatchRejection<float>(const TurnRows&, const TokenLogProbs<float>&, const MrsOptions&,
                                              uint8_t*, uint8_t*);
template Status TokenMismatchRejection<double>(const TurnRows&, const TokenLogProbs<double>&, const MrsOptions&,
                                               uint8_t*, uint8_t*);

}  // namespace kgym::rl
