#include "rl/jsonl_rows.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>

#include "rl/returns.h"

namespace kgym::rl {
namespace {

using nlohmann::json;

std::string Where(size_t i, const char* field) { return "row " + std::to_string(i + 1) + ", field \"" + field + "\""; }

Status NeedKey(const json& row, size_t i, const char* field, std::string* key) {
  auto it = row.find(field);
  if (it == row.end() || it->is_null()) return Status::InvalidArgument(Where(i, field) + ": missing");
  if (it->is_string()) {
    *key = it->get<std::string>();
  } else if (it->is_number_integer()) {
    *key = std::to_string(it->get<int64_t>());
  } else {
    return Status::InvalidArgument(Where(i, field) + ": must be a string or an integer");
  }
  return Status::Ok();
}

Status NeedInt(const json& row, size_t i, const char* field, int64_t* out) {
  auto it = row.find(field);
  if (it == row.end() || !it->is_number())
    return Status::InvalidArgument(Where(i, field) + ": missing or not a number");
  const double d = it->get<double>();
  if (d != static_cast<double>(static_cast<int64_t>(d))) {
    return Status::InvalidArgument(Where(i, field) + ": must be an integer");
  }
  *out = static_cast<int64_t>(d);
  return Status::Ok();
}

Status NeedDouble(const json& row, size_t i, const char* field, double* out) {
  auto it = row.find(field);
  if (it == row.end() || !it->is_number())
    return Status::InvalidArgument(Where(i, field) + ": missing or not a number");
  *out = it->get<double>();
  return Status::Ok();
}

// 0/1 or bool; absent -> dflt.
Status OptFlag(const json& row, size_t i, const char* field, uint8_t dflt, uint8_t* out) {
  auto it = row.find(field);
  if (it == row.end() || it->is_null()) {
    *out = dflt;
  } else if (it->is_boolean()) {
    *out = it->get<bool>() ? 1 : 0;
  } else if (it->is_number()) {
    *out = it->get<double>() != 0.0 ? 1 : 0;
  } else {
    return Status::InvalidArgument(Where(i, field) + ": must be 0, 1, true or false");
  }
  return Status::Ok();
}

Status NeedNumbers(const json& row, size_t i, const char* field, std::vector<double>* out) {
  auto it = row.find(field);
  if (it == row.end() || !it->is_array()) return Status::InvalidArgument(Where(i, field) + ": missing or not an array");
  for (const json& v : *it) {
    if (!v.is_number()) return Status::InvalidArgument(Where(i, field) + ": every entry must be a number");
    out->push_back(v.get<double>());
  }
  return Status::Ok();
}

// Dense ids by first appearance.
class IdMap {
 public:
  int64_t Get(const std::string& key) {
    auto [it, fresh] = ids_.emplace(key, static_cast<int64_t>(ids_.size()));
    (void)fresh;
    return it->second;
  }
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }

 private:
  std::unordered_map<std::string, int64_t> ids_;
};

// Rows in trajectory order: grouped by trajectory (first appearance), padding first, then by turn.
struct Ordered {
  std::vector<size_t> order;  // position -> input row
  std::vector<int64_t> traj, turn, group;
  TurnRows View(bool with_group) const {
    TurnRows r;
    r.size = order.size();
    r.traj = traj.data();
    r.turn = turn.data();
    r.group = with_group ? group.data() : nullptr;
    return r;
  }
};

Status OrderRows(const JsonRows& rows, bool with_group, Ordered* out) {
  const size_t n = rows.size();
  std::vector<int64_t> traj(n), turn(n), group(n, 0);
  IdMap trajs, groups;
  std::vector<int64_t> traj_group;
  for (size_t i = 0; i < n; ++i) {
    std::string key;
    if (Status s = NeedKey(rows[i], i, "traj", &key); !s.ok()) return s;
    traj[i] = trajs.Get(key);
    if (Status s = NeedInt(rows[i], i, "turn", &turn[i]); !s.ok()) return s;
    if (with_group) {
      if (Status s = NeedKey(rows[i], i, "uid", &key); !s.ok()) return s;
      group[i] = groups.Get(key);
      if (static_cast<size_t>(traj[i]) >= traj_group.size()) traj_group.resize(static_cast<size_t>(traj[i]) + 1, -1);
      int64_t& tg = traj_group[static_cast<size_t>(traj[i])];
      if (tg >= 0 && tg != group[i]) {
        return Status::InvalidArgument(Where(i, "uid") + ": trajectory " + rows[i]["traj"].dump() +
                                       " appears under two uids");
      }
      tg = group[i];
    }
  }
  out->order.resize(n);
  std::iota(out->order.begin(), out->order.end(), size_t{0});
  std::stable_sort(out->order.begin(), out->order.end(), [&](size_t a, size_t b) {
    if (traj[a] != traj[b]) return traj[a] < traj[b];
    const int64_t ta = turn[a] <= 0 ? 0 : turn[a], tb = turn[b] <= 0 ? 0 : turn[b];
    return ta < tb;
  });
  for (size_t p = 1; p < n; ++p) {
    const size_t a = out->order[p - 1], b = out->order[p];
    if (traj[a] == traj[b] && turn[a] > 0 && turn[a] == turn[b]) {
      return Status::InvalidArgument(Where(b, "turn") + ": trajectory " + rows[b]["traj"].dump() + " has turn " +
                                     std::to_string(turn[b]) + " twice");
    }
  }
  out->traj.resize(n);
  out->turn.resize(n);
  out->group.resize(n);
  for (size_t p = 0; p < n; ++p) {
    out->traj[p] = traj[out->order[p]];
    out->turn[p] = turn[out->order[p]];
    out->group[p] = group[out->order[p]];
  }
  return Status::Ok();
}

Status RewardsAndMask(const JsonRows& rows, const Ordered& o, std::vector<double>* rewards,
                      std::vector<uint8_t>* mask) {
  const size_t n = o.order.size();
  rewards->assign(n, 0.0);
  mask->assign(n, 1);
  for (size_t p = 0; p < n; ++p) {
    const size_t i = o.order[p];
    if (o.turn[p] > 0) {
      if (Status s = NeedDouble(rows[i], i, "reward", &(*rewards)[p]); !s.ok()) return s;
    }
    if (Status s = OptFlag(rows[i], i, "loss_mask", 1, &(*mask)[p]); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Status ReadJsonLines(std::istream& in, JsonRows* rows) {
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return Status::InvalidArgument("line " + std::to_string(lineno) + ": not a JSON object");
    }
    rows->push_back(std::move(j));
  }
  return Status::Ok();
}

Status RunAdvantages(JsonRows* rows, const AdvantageOptions& opt, bool mask_void_turns) {
  Ordered o;
  if (Status s = OrderRows(*rows, /*with_group=*/true, &o); !s.ok()) return s;
  std::vector<double> rewards, ret(o.order.size()), adv(o.order.size());
  std::vector<uint8_t> mask;
  if (Status s = RewardsAndMask(*rows, o, &rewards, &mask); !s.ok()) return s;
  const TurnRows view = o.View(true);
  if (mask_void_turns) {
    if (Status s = MaskVoidTurns(view, rewards.data(), mask.data()); !s.ok()) return s;
  }
  AdvantageOptions ao = opt;
  ao.num_groups = 0;
  if (Status s = ComputeAdvantages(view, rewards.data(), mask.data(), ao, ret.data(), adv.data()); !s.ok()) return s;
  for (size_t p = 0; p < o.order.size(); ++p) {
    json& row = (*rows)[o.order[p]];
    row["return"] = ret[p];
    row["advantage"] = adv[p];
    if (mask_void_turns) row["loss_mask"] = static_cast<int>(mask[p]);
  }
  return Status::Ok();
}

Status RunMismatch(JsonRows* rows, const MrsOptions& opt) {
  Ordered o;
  if (Status s = OrderRows(*rows, /*with_group=*/false, &o); !s.ok()) return s;
  const size_t n = o.order.size();
  std::vector<int64_t> offsets(n + 1, 0);
  std::vector<double> train, rollout;
  std::vector<uint8_t> tmask;
  for (size_t p = 0; p < n; ++p) {
    const size_t i = o.order[p];
    const json& row = (*rows)[i];
    const size_t before = train.size();
    if (Status s = NeedNumbers(row, i, "logp_train", &train); !s.ok()) return s;
    if (Status s = NeedNumbers(row, i, "logp_rollout", &rollout); !s.ok()) return s;
    if (rollout.size() != train.size()) {
      return Status::InvalidArgument(Where(i, "logp_rollout") + ": must have as many entries as logp_train");
    }
    uint8_t row_mask = 1;
    if (Status s = OptFlag(row, i, "loss_mask", 1, &row_mask); !s.ok()) return s;
    auto m = row.find("mask");
    if (m != row.end() && !m->is_null()) {
      if (!m->is_array() || m->size() != train.size() - before) {
        return Status::InvalidArgument(Where(i, "mask") + ": must be an array as long as logp_train");
      }
      for (const json& v : *m) tmask.push_back(row_mask && v.is_number() && v.get<double>() != 0.0 ? 1 : 0);
    } else {
      tmask.insert(tmask.end(), train.size() - before, row_mask);
    }
    offsets[p + 1] = static_cast<int64_t>(train.size());
  }
  TokenLogProbs<double> tokens{n, offsets.data(), train.data(), rollout.data(), tmask.data()};
  const TurnRows view = o.View(false);
  if (opt.level == MrsLevel::kToken) {
    std::vector<uint8_t> token_keep(train.size()), row_keep(n);
    if (Status s = TokenMismatchRejection(view, tokens, opt, token_keep.data(), row_keep.data()); !s.ok()) return s;
    std::vector<RowLogRatio> stats(n);
    if (Status s = SummarizeLogRatios(tokens, stats.data()); !s.ok()) return s;
    for (size_t p = 0; p < n; ++p) {
      json& row = (*rows)[o.order[p]];
      json tk = json::array();
      for (int64_t j = offsets[p]; j < offsets[p + 1]; ++j) tk.push_back(static_cast<int>(token_keep[j]));
      const double lw = stats[p].count > 0 ? stats[p].sum / static_cast<double>(stats[p].count) : 0.0;
      row["ratio"] = std::exp(std::clamp(lw, -20.0, 20.0));
      row["keep"] = static_cast<int>(row_keep[p]);
      row["token_keep"] = std::move(tk);
    }
    return Status::Ok();
  }
  std::vector<RowLogRatio> stats(n);
  if (Status s = SummarizeLogRatios(tokens, stats.data()); !s.ok()) return s;
  std::vector<double> ratio(n);
  std::vector<uint8_t> keep(n);
  if (Status s = MismatchRejection(view, stats.data(), opt, ratio.data(), keep.data()); !s.ok()) return s;
  for (size_t p = 0; p < n; ++p) {
    json& row = (*rows)[o.order[p]];
    row["ratio"] = ratio[p];
    row["keep"] = static_cast<int>(keep[p]);
  }
  return Status::Ok();
}

Status RunProfilingRejection(JsonRows* rows, const PrsOptions& opt) {
  const size_t n = rows->size();
  std::vector<double> coverage(n), speedup(n, 0.0);
  std::vector<uint8_t> correct(n);
  const bool need_speed = opt.speedup_threshold >= 0;
  for (size_t i = 0; i < n; ++i) {
    const json& row = (*rows)[i];
    if (Status s = NeedDouble(row, i, "coverage", &coverage[i]); !s.ok()) return s;
    auto c = row.find("correct");
    if (c == row.end() || c->is_null()) return Status::InvalidArgument(Where(i, "correct") + ": missing");
    if (Status s = OptFlag(row, i, "correct", 0, &correct[i]); !s.ok()) return s;
    if (need_speed) {
      if (Status s = NeedDouble(row, i, "speedup", &speedup[i]); !s.ok()) return s;
    }
  }
  PrsInput in;
  in.size = n;
  in.coverage = coverage.data();
  in.correct = correct.data();
  in.speedup = need_speed ? speedup.data() : nullptr;
  // The geometric level needs trajectory order; the turn level keeps input order (draw i = input row i).
  Ordered o;
  std::vector<double> cov_o, speed_o;
  std::vector<uint8_t> correct_o;
  TurnRows view;
  if (opt.level == PrsLevel::kGeometric) {
    if (Status s = OrderRows(*rows, false, &o); !s.ok()) return s;
    for (size_t p = 0; p < n; ++p) {
      cov_o.push_back(coverage[o.order[p]]);
      speed_o.push_back(speedup[o.order[p]]);
      correct_o.push_back(correct[o.order[p]]);
    }
    view = o.View(false);
    in.coverage = cov_o.data();
    in.correct = correct_o.data();
    in.speedup = need_speed ? speed_o.data() : nullptr;
    in.rows = &view;
  }
  std::vector<double> p(n);
  std::vector<uint8_t> keep(n);
  if (Status s = ProfilingRejection(in, opt, p.data(), keep.data()); !s.ok()) return s;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = opt.level == PrsLevel::kGeometric ? o.order[k] : k;
    (*rows)[i]["keep_prob"] = p[k];
    (*rows)[i]["keep"] = static_cast<int>(keep[k]);
  }
  return Status::Ok();
}

Status RunGroupFilter(JsonRows* rows, const GroupFilterOptions& opt) {
  Ordered o;
  if (Status s = OrderRows(*rows, /*with_group=*/true, &o); !s.ok()) return s;
  std::vector<double> rewards;
  std::vector<uint8_t> mask;
  if (Status s = RewardsAndMask(*rows, o, &rewards, &mask); !s.ok()) return s;
  GroupFilterOptions go = opt;
  go.num_groups = 0;
  std::vector<uint8_t> group_keep, row_keep(o.order.size());
  if (Status s = ZeroVarianceGroupFilter(o.View(true), rewards.data(), mask.data(), go, &group_keep, row_keep.data());
      !s.ok()) {
    return s;
  }
  for (size_t p = 0; p < o.order.size(); ++p) (*rows)[o.order[p]]["group_keep"] = static_cast<int>(row_keep[p]);
  return Status::Ok();
}

Status RunReward(JsonRows* rows, const RewardConfig& cfg) {
  RewardConfig c = cfg;
  if (Status s = ParseRewardName(cfg.name, &c); !s.ok()) return s;
  for (json& row : *rows) {
    RewardBreakdown b = ComputeRewardBreakdown(row, c);
    row["reward"] = b.reward;
    row["reward_detail"] = RewardBreakdownToJson(b);
  }
  return Status::Ok();
}

}  // namespace kgym::rl
