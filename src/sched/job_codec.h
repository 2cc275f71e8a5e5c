// The wire/storage form of a scheduled job: SchedJob <-> JSON. The same JSON is what the server stores in
// JobStore.request_json and what travels through Redis to `kgym worker`, so a job survives a restart and
// crosses nodes without losing a field.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sched/scheduler.h"

namespace kgym {

nlohmann::json EvalRequestToJson(const EvalRequest& r);
EvalRequest EvalRequestFromJson(const nlohmann::json& j);

nlohmann::json SchedJobToJson(const SchedJob& job);
Status SchedJobFromJson(const std::string& text, SchedJob* job);

}  // namespace kgym
