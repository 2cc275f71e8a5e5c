// The learner's HTTP protocol as kgym's trainer speaks it. The learner (python/kgym_train/protocol.py, which
// documents each endpoint's body) is its other half; tests/py/test_train_protocol.py checks that the two define
// the same paths and fields, name for name (kPathHealth <-> PATH_HEALTH). Bodies are strict JSON: a number that is not
// finite (a skipped step's gradient norm) comes as null.
#pragma once

namespace kgym::train::protocol {

inline constexpr char kPathHealth[] = "/health";
inline constexpr char kPathModels[] = "/v1/models";
inline constexpr char kPathChat[] = "/v1/chat/completions";
inline constexpr char kPathLogprobs[] = "/kgym/logprobs";
inline constexpr char kPathTrainStep[] = "/kgym/train_step";
inline constexpr char kPathSave[] = "/kgym/save";
inline constexpr char kPathSaveWeights[] = "/kgym/save_weights";
inline constexpr char kPathMetrics[] = "/kgym/metrics";
inline constexpr char kPathUpdateWeights[] = "/update_weights_from_disk";
inline constexpr char kPathShutdown[] = "/kgym/shutdown";

inline constexpr char kFieldReturnTokenIds[] = "return_token_ids";
inline constexpr char kFieldPromptTokenIds[] = "prompt_token_ids";
inline constexpr char kFieldTokenIds[] = "token_ids";
inline constexpr char kFieldPolicyVersion[] = "policy_version";
inline constexpr char kFieldRows[] = "rows";
inline constexpr char kFieldPromptIds[] = "prompt_ids";
inline constexpr char kFieldResponseIds[] = "response_ids";
inline constexpr char kFieldLogprobs[] = "logprobs";
inline constexpr char kFieldEntropy[] = "entropy";
inline constexpr char kFieldWithEntropy[] = "with_entropy";
inline constexpr char kFieldAdvantage[] = "advantage";
inline constexpr char kFieldOldLogprobs[] = "old_logprobs";
inline constexpr char kFieldTokenMask[] = "token_mask";
inline constexpr char kFieldStep[] = "step";
inline constexpr char kFieldMetrics[] = "metrics";
inline constexpr char kFieldDir[] = "dir";
inline constexpr char kFieldModelPath[] = "model_path";
inline constexpr char kFieldTruncatedRows[] = "truncated_rows";

// The rows of the bodies, each one's fields once, in the order the trainer writes them (protocol.py has the same
// tables, LOGPROBS_ROW <-> kLogprobsRow):
inline constexpr const char* kLogprobsRow[] = {kFieldPromptIds, kFieldResponseIds};  // POST /kgym/logprobs: rows[i]
inline constexpr const char* kLogprobsReplyRow[] = {kFieldLogprobs, kFieldEntropy};  // its reply: rows[i]
// POST /kgym/train_step: rows[i]: token ids, the row's advantage, per response token the rollout's log-prob and
// whether it is in the loss.
inline constexpr const char* kTrainRow[] = {kFieldPromptIds, kFieldResponseIds, kFieldAdvantage, kFieldOldLogprobs,
                                            kFieldTokenMask};

// The line the learner prints on stdout once it listens: "<kReadyLine> port=<port>".
inline constexpr char kReadyLine[] = "KGYM_LEARNER_READY";

// A learner that stops on bad input or configuration (a data file's row and field, a model too short for
// data.max_length) writes one message saying so into the file named after kArgErrorFile (`python -m kgym_train
// --error-file F sft ...`) and exits with kExitUserError: kgym reports it as the user's error, not as a crash.
inline constexpr char kArgErrorFile[] = "--error-file";
inline constexpr int kExitUserError = 3;

}  // namespace kgym::train::protocol
