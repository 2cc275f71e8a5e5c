// Where `kgym train` continues from, and what of its run folder a continuation replaces.
//
// A run continues from a checkpoint (checkpoints/step_N, complete when both its halves are written: the learner's
// state and kgym_state.json). The steps after N are done again, so what they left is dropped first: their rows of
// metrics.jsonl (each step's row is written once, by the run that finishes the step) and their rollouts/step_M and
// val/step_M folders. What the steps up to N left is not touched. With no checkpoint every step is done again
// (from -1: validation at step 0 included).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace kgym::train {

// The newest complete checkpoint under out_dir/checkpoints, or "".
std::string NewestCheckpoint(const std::string& out_dir);

// The step `checkpoint` holds (its kgym_state.json); InvalidArgument when it is not a kgym train checkpoint.
Status CheckpointStep(const std::string& checkpoint, int64_t* step);

// Drops what the steps after `step` left in out_dir (above). Lines of metrics.jsonl that are not JSON objects with
// a step (a line cut off by a killed writer) go too.
Status ForgetStepsAfter(const std::string& out_dir, int64_t step);

}  // namespace kgym::train
