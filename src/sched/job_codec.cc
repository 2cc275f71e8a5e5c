#include "sched/job_codec.h"

namespace kgym {

nlohmann::json EvalRequestToJson(const EvalRequest& r) {
  return {{"task_id", r.task_id},
          {"reference_code", r.reference_code},
          {"kernel_code", r.kernel_code},
          {"entry_point", r.entry_point},
          {"backend", r.backend},
          {"num_correct_trials", r.num_correct_trials},
          {"num_perf_trials", r.num_perf_trials},
          {"min_perf_trials", r.min_perf_trials},
          {"perf_ci_target", r.perf_ci_target},
          {"precision", r.precision},
          {"num_warmup", r.num_warmup},
          {"timeout_s", r.timeout_s},
          {"reference_backend", r.reference_backend},
          {"run_correctness", r.run_correctness},
          {"measure_performance", r.measure_performance},
          {"enable_profiling", r.enable_profiling},
          {"detect_decoy", r.detect_decoy},
          {"coverage_floor", r.coverage_floor},
          {"train_mode", r.train_mode},
          {"atol", r.atol},
          {"rtol", r.rtol},
          {"atol_half", r.atol_half},
          {"rtol_half", r.rtol_half},
          {"memory_limit_gb", r.memory_limit_gb},
          {"size", r.size},
          {"extra", r.extra}};
}

EvalRequest EvalRequestFromJson(const nlohmann::json& j) {
  EvalRequest r;
  r.task_id = j.value("task_id", "");
  r.reference_code = j.value("reference_code", "");
  r.kernel_code = j.value("kernel_code", "");
  r.entry_point = j.value("entry_point", r.entry_point);
  r.backend = j.value("backend", r.backend);
  r.num_correct_trials = j.value("num_correct_trials", r.num_correct_trials);
  r.num_perf_trials = j.value("num_perf_trials", r.num_perf_trials);
  r.min_perf_trials = j.value("min_perf_trials", r.min_perf_trials);
  r.perf_ci_target = j.value("perf_ci_target", r.perf_ci_target);
  r.precision = j.value("precision", r.precision);
  r.num_warmup = j.value("num_warmup", r.num_warmup);
  r.timeout_s = j.value("timeout_s", r.timeout_s);
  r.reference_backend = j.value("reference_backend", r.reference_backend);
  r.run_correctness = j.value("run_correctness", r.run_correctness);
  r.measure_performance = j.value("measure_performance", r.measure_performance);
  r.enable_profiling = j.value("enable_profiling", r.enable_profiling);
  r.detect_decoy = j.value("detect_decoy", r.detect_decoy);
  r.coverage_floor = j.value("coverage_floor", r.coverage_floor);
  r.train_mode = j.value("train_mode", r.train_mode);
  r.atol = j.value("atol", r.atol);
  r.rtol = j.value("rtol", r.rtol);
  r.atol_half = j.value("atol_half", r.atol_half);
  r.rtol_half = j.value("rtol_half", r.rtol_half);
  r.memory_limit_gb = j.value("memory_limit_gb", r.memory_limit_gb);
  r.size = j.value("size", r.size);
  if (j.contains("extra") && j["extra"].is_object()) r.extra = j["extra"];
  return r;
}

nlohmann::json SchedJobToJson(const SchedJob& job) {
  return {{"id", job.id},
          {"generation", job.generation},
          {"priority", PriorityName(job.priority)},
          {"deadline", job.deadline},
          {"device", job.device},
          {"request", EvalRequestToJson(job.request)}};
}

Status SchedJobFromJson(const std::string& text, SchedJob* job) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("request"))
    return Status::InvalidArgument("stored job is not valid JSON with a request");
  job->id = j.value("id", "");
  job->generation = j.value("generation", int64_t{1});
  if (!PriorityFromName(j.value("priority", "normal"), &job->priority)) job->priority = Priority::kNormal;
  job->deadline = j.value("deadline", 0.0);
  job->device = j.value("device", "");
  job->request = EvalRequestFromJson(j["request"]);
  return Status::Ok();
}

}  // namespace kgym
