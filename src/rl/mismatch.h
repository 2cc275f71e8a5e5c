// MRS: mismatch rejection sampling between the trainer's and the rollout engine's token log-probs
// (research/drkernel.md §3.1; the code's compute_rollout_importance_weights_and_rejection_mask).
//
// Two stages, so a trainer can do the token pass wherever its tensors live:
//  1. SummarizeLogRatios: per row (turn), over its valid tokens, the sum, count and minimum of
//     log_ratio = logp_train - logp_rollout.
//  2. MismatchRejection: per row ratio and keep flag from those summaries. Rows follow rl/turn_rows.h
//     (traj runs); rows.group is not needed. Padding rows and rows without valid tokens add nothing.
// Levels (the ratio w a row is judged by; log w is clamped to [-20, 20] before exp):
//   geometric (default) exp(mean log_ratio over all valid tokens of all turns of the trajectory), whole
//                       trajectory kept or rejected together;
//   turn_geo            exp(mean over the row's tokens);   turn  exp(sum over the row's tokens);
//   sequence            exp(sum over all tokens of the trajectory);
//   token               per token (TokenMismatchRejection; a row is kept when any of its tokens is).
// keep = lower <= w <= upper, and not vetoed. Veto (veto > 0): a row with any valid token whose
// log_ratio < log(veto) is rejected. veto_scope kTurn is the code (that row only); kTrajectory is the paper's
// "reject the entire sequence" (every row of the trajectory).
// A trajectory or row with no valid tokens has w = 1.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "rl/turn_rows.h"

namespace kgym::rl {

// Token log-probs of rows in CSR form: row i owns tokens [offsets[i], offsets[i+1]). A padded
// (rows × L) tensor needs no offsets: leave offsets null and set row_length = L (row i owns [i·L, (i+1)·L)),
// with token_mask = its response mask. token_mask may be null.
template <typename T>
struct TokenLogProbs {
  size_t rows = 0;
  const int64_t* offsets = nullptr;  // rows + 1 entries, non-decreasing, offsets[0] = 0; or null, see row_length
  const T* logp_train = nullptr;
  const T* logp_rollout = nullptr;
  const uint8_t* token_mask = nullptr;
  int64_t row_length = 0;  // tokens per row when offsets is null (> 0)
};

struct RowLogRatio {
  double sum = 0.0;
  int64_t count = 0;
  double min = 0.0;  // +inf when count == 0
};

// Instantiated for float and double. `out` has tokens.rows entries. Every row is summed in token order, one
// double accumulator (so results do not depend on the layout, the thread split or the build's instruction set).
template <typename T>
Status SummarizeLogRatios(const TokenLogProbs<T>& tokens, RowLogRatio* out);

enum class MrsLevel { kGeometric, kToken, kTurn, kTurnGeo, kSequence };
enum class VetoScope { kTurn, kTrajectory };

Status ParseMrsLevel(const std::string& name, MrsLevel* out);  // geometric|token|turn|turn_geo|sequence

struct MrsOptions {
  MrsLevel level = MrsLevel::kGeometric;
  double lower = 0.999;  // the recipe's kwargs; the code's defaults without kwargs are 0.5 / 2.0
  double upper = 1.001;
  double veto = 1e-4;  // <= 0 disables the veto
  VetoScope veto_scope = VetoScope::kTurn;
};

// Row-level levels (all but token). ratio and keep have rows.size entries (ratio of a padding row: 1). Large
// batches run on a few threads split at trajectory boundaries (same results); on an error the outputs are
// unspecified.
Status MismatchRejection(const TurnRows& rows, const RowLogRatio* stats, const MrsOptions& opt, double* ratio,
                         uint8_t* keep);

// The summaries as three parallel arrays of rows.size entries (what a trainer reduces where its tensors live).
struct RowLogRatioArrays {
  const double* sum = nullptr;
  const int64_t* count = nullptr;
  const double* min = nullptr;
};
Status MismatchRejection(const TurnRows& rows, const RowLogRatioArrays& stats, const MrsOptions& opt, double* ratio,
                         uint8_t* keep);

// The same from the tokens in one pass, without materialising the row summaries; the same results bit for bit.
// Large batches run on a few threads split at trajectory boundaries. On an error the outputs are unspecified.
template <typename T>
Status MismatchRejectionFromTokens(const TurnRows& rows, const TokenLogProbs<T>& tokens, const MrsOptions& opt,
                                   double* ratio, uint8_t* keep);

// Token level: token_keep[j] for every token (0 for invalid tokens), row_keep[i] = any token of row i kept
// (and the row not vetoed). Row vetoes apply as above; rows may be null only with veto_scope kTurn.
template <typename T>
Status TokenMismatchRejection(const TurnRows& rows, const TokenLogProbs<T>& tokens, const MrsOptions& opt,
                              uint8_t* token_keep, uint8_t* row_keep);

}  // namespace kgym::rl
