// RunReference: the reference's run in a pristine worker that never sees candidate code. In order: the job (code,
// secret seeds), the constructor arguments, every correctness trial's inputs and outputs (the task's own draw, a
// signed/wider one and a sparse one), the timing pool's sets (as many as its byte budget allows), then, when the
// request measures performance, the reference's timing under the device's TimingLock and, on a GPU with the kernel
// recorder, its kernel timeline: what every candidate of this configuration is judged against.
//
// Never fails as a Status: a broken reference comes back with error_kind "invalid", an infrastructure failure with
// "timeout" or "system" (which the ReferenceCache does not keep).
#pragma once

#include <memory>
#include <string>

#include "eval/reference.h"
#include "eval/run_context.h"
#include "eval/worker_failure.h"

namespace kgym {

std::shared_ptr<ReferenceData> RunReference(const EvalRequest& req, const std::string& key, const Deadline& dl,
                                            const RunContext& ctx);

}  // namespace kgym
