// One training step's RL bookkeeping over a TrainBatch, in Dr.Kernel's order (research/drkernel.md §3.3), all of
// it the RL core's (src/rl):
//   (control runs: rewards permuted across the batch's rows) -> void-turn loss mask -> MRS on the rows still in
//   the loss (learner log-probs vs the engine's; geometric per trajectory, token veto) -> PRS on the rows MRS kept
//   (correct turns with low coverage dropped with probability) -> zero-variance group filter (last turns) ->
//   advantages (TRLOO by default; MRS/PRS-rejected rows stay in the baselines, only loss-masked rows leave the
//   groups) -> in_loss = loss_mask & MRS & PRS & group.
// `metrics` gets the step's numbers under reward/, mask/, mrs/, mismatch/ (the log-ratio distribution), prs/,
// filter/ and adv/.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/status.h"
#include "rl/advantage.h"
#include "rl/group_filter.h"
#include "rl/mismatch.h"
#include "rl/profiling_rejection.h"
#include "train/train_batch.h"

namespace kgym::train {

struct RlStepOptions {
  rl::AdvantageOptions advantage;
  bool mask_void_turns = true;
  bool mrs = true;
  rl::MrsOptions mrs_options;
  bool prs = true;
  rl::PrsOptions prs_options;
  bool group_filter = true;
  rl::GroupFilterOptions filter;
  bool reward_shuffle = false;
  uint64_t shuffle_seed = 0;
};

// From a resolved `kgym train` config (algorithm.*); `step` seeds PRS and the control shuffle.
Status RlStepOptionsFromConfig(const nlohmann::json& cfg, int64_t step, RlStepOptions* out);

struct RlStepOutcome {
  std::vector<double> rewards;  // as used (permuted in control runs)
  std::vector<double> returns, advantages, mrs_ratio, prs_prob;
  std::vector<uint8_t> loss_mask, mrs_keep, prs_keep, group_keep, in_loss;
  std::vector<std::vector<uint8_t>> token_mask;  // per row: the tokens in the loss (all 0 for rows out of it)
  nlohmann::json metrics = nlohmann::json::object();
};

// `train_logprobs[i]`: the learner's log-probs of row i's response tokens (same length as the row's).
Status RunRlStep(const TrainBatch& batch, const std::vector<std::vector<double>>& train_logprobs,
                 const RlStepOptions& opt, RlStepOutcome* out);

}  // namespace kgym::train
