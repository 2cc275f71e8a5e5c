"""The learner's HTTP protocol, as the learner serves it.

Mirrors src/train/learner_protocol.h, which kgym's trainer (C++) speaks; tests/py/test_train_protocol.py checks
that the two define the same paths and fields. Every body is strict JSON: a number that is not finite (a skipped
step's gradient norm or loss) travels as null, never as NaN or Infinity, which the trainer's parser refuses.

  GET  /health                     -> {status, policy_version, model, device}
  GET  /v1/models                  -> OpenAI model list
  POST /v1/chat/completions        OpenAI chat completions from the live policy. Extensions (vLLM's names):
                                   request "return_token_ids": true -> reply "prompt_token_ids" and
                                   choices[i]."token_ids" (the sampled ids, stop token included); "logprobs":
                                   true -> choices[i].logprobs.content[j] = {token, logprob, bytes}; "top_k".
                                   Every reply carries "policy_version".
  POST /kgym/logprobs              {rows: [{prompt_ids, response_ids}], with_entropy}
                                   -> {rows: [{logprobs, entropy}], policy_version, truncated_rows, seconds}
  POST /kgym/train_step            {step, rows: [{prompt_ids, response_ids, advantage, old_logprobs, token_mask}]}
                                   -> {metrics: {...}, policy_version}   (one optimizer step, PPO dual-clip)
  POST /kgym/save                  {dir, step} -> {dir, policy_version}   (a checkpoint: model + optimizer + rng +
                                   state, checkpoint.py)
  POST /kgym/save_weights          {dir} -> {dir, policy_version}   (the model folder alone: weights for an engine)
  POST /kgym/metrics               {step, metrics: {name: number}} -> {}   (written to the TensorBoard log)
  POST /update_weights_from_disk   {model_path} -> {success, message, policy_version}   (SGLang's name: how an
                                   external engine is told to load pushed weights; the learner serves it too)
  POST /kgym/shutdown              -> {}   (the server stops after replying)
"""
import json
import math


PATH_HEALTH = "/health"
PATH_MODELS = "/v1/models"
PATH_CHAT = "/v1/chat/completions"
PATH_LOGPROBS = "/kgym/logprobs"
PATH_TRAIN_STEP = "/kgym/train_step"
PATH_SAVE = "/kgym/save"
PATH_SAVE_WEIGHTS = "/kgym/save_weights"
PATH_METRICS = "/kgym/metrics"
PATH_UPDATE_WEIGHTS = "/update_weights_from_disk"
PATH_SHUTDOWN = "/kgym/shutdown"

FIELD_RETURN_TOKEN_IDS = "return_token_ids"
FIELD_PROMPT_TOKEN_IDS = "prompt_token_ids"
FIELD_TOKEN_IDS = "token_ids"
FIELD_POLICY_VERSION = "policy_version"
FIELD_ROWS = "rows"
FIELD_PROMPT_IDS = "prompt_ids"
FIELD_RESPONSE_IDS = "response_ids"
FIELD_LOGPROBS = "logprobs"
FIELD_ENTROPY = "entropy"
FIELD_WITH_ENTROPY = "with_entropy"
FIELD_ADVANTAGE = "advantage"
FIELD_OLD_LOGPROBS = "old_logprobs"
FIELD_TOKEN_MASK = "token_mask"
FIELD_STEP = "step"
FIELD_METRICS = "metrics"
FIELD_DIR = "dir"
FIELD_MODEL_PATH = "model_path"
FIELD_TRUNCATED_ROWS = "truncated_rows"

# The rows of the bodies, each one's fields once, in the order the trainer writes them (learner_protocol.h has the
# same tables; tests/py/test_train_protocol.py checks that they agree and that the learner names a row's field only
# through them):
LOGPROBS_ROW = (FIELD_PROMPT_IDS, FIELD_RESPONSE_IDS)  # POST /kgym/logprobs: rows[i] (token ids)
LOGPROBS_REPLY_ROW = (FIELD_LOGPROBS, FIELD_ENTROPY)  # its reply: rows[i] (one float per response token)
# POST /kgym/train_step: rows[i]: token ids, the row's advantage (a number), and per response token the rollout's
# log-prob and whether it is in the loss.
TRAIN_ROW = (FIELD_PROMPT_IDS, FIELD_RESPONSE_IDS, FIELD_ADVANTAGE, FIELD_OLD_LOGPROBS, FIELD_TOKEN_MASK)

# The line the server prints on stdout once it listens: "<READY_LINE> port=<port>".
READY_LINE = "KGYM_LEARNER_READY"

# Bad input or configuration (errors.UserError): its message goes into the file named after ARG_ERROR_FILE and the
# process exits with EXIT_USER_ERROR, which kgym reports as the user's error (never as an internal one).
ARG_ERROR_FILE = "--error-file"
EXIT_USER_ERROR = 3


def _finite(v):
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def dumps(obj):
    """obj as strict JSON, a non-finite number as null: the learner's replies and its metrics files. (A skipped step's
    NaN gradient norm, written as json.dumps writes it, made the trainer take the reply for garbage and restart the
    learner to the same step.)"""
    try:
        return json.dumps(obj, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(obj), allow_nan=False)

