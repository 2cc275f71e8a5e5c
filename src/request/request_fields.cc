#include "request/request_fields.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace kgym::request {

namespace {

using T = FieldType;
constexpr double kInf = kNoLimit;

// clang-format off
const std::vector<RequestField>& Table() {
  static const std::vector<RequestField> kFields = {
    {"task_id", "--task-id", "", T::kString, 1, 100, "", true, true,
     "the evaluation's id, echoed in the result (over HTTP also the key of its stored result)",
     [](EvalRequest* r) -> FieldSlot { return &r->task_id; }},
    {"entry_point", "", "", T::kString, 0, kInf, "", true, true,
     "the reference's class; the candidate's is <entry_point>New",
     [](EvalRequest* r) -> FieldSlot { return &r->entry_point; }},
    {"backend", "--backend", "gym.backend", T::kString, 0, kInf, "triton|cuda", true, true,
     "how the candidate builds its kernels",
     [](EvalRequest* r) -> FieldSlot { return &r->backend; }},
    {"num_correct_trials", "--num-correct-trials", "gym.num_correct_trials,eval.num_correct_trials", T::kInt, 1, 20,
     "", true, true, "correctness trials",
     [](EvalRequest* r) -> FieldSlot { return &r->num_correct_trials; }},
    {"num_perf_trials", "--num-perf-trials", "gym.num_perf_trials,eval.num_perf_trials", T::kInt, 1, 1000, "", true,
     true, "timed calls", [](EvalRequest* r) -> FieldSlot { return &r->num_perf_trials; }},
    {"min_perf_trials", "--min-perf-trials", "", T::kInt, 0, 1000, "", false, false,
     "adaptive trials: timed calls stop once the median's 95% interval is within 0.5%, after at least this many (the "
     "perf-trial count is the most); 0 = always the perf-trial count",
     [](EvalRequest* r) -> FieldSlot { return &r->min_perf_trials; }},
    {"perf_ci_target", "--perf-ci", "", T::kNumber, 0.0001, 1, "", false, false,
     "adaptive trials: stop once both ends of the median's 95% interval are within this fraction of it",
     [](EvalRequest* r) -> FieldSlot { return &r->perf_ci_target; }},
    {"num_warmup", "--warmup", "", T::kInt, 0, 100, "", true, false, "untimed warmup calls",
     [](EvalRequest* r) -> FieldSlot { return &r->num_warmup; }},
    {"timeout", "--eval-timeout", "gym.timeout", T::kInt, 10, 3600, "", true, true,
     "limit of one evaluation, seconds", [](EvalRequest* r) -> FieldSlot { return &r->timeout_s; }},
    {"reference_backend", "--reference-backend", "gym.reference_backend", T::kString, 0, kInf, "", true, true,
     "how the reference runs: pytorch (eager) | torch_compile",
     [](EvalRequest* r) -> FieldSlot { return &r->reference_backend; }},
    {"size", "--size", "gym.size,eval.size", T::kString, 0, kInf, "", false, true,
     "task size (KGYM_TASK_SIZE seen by the reference), e.g. small",
     [](EvalRequest* r) -> FieldSlot { return &r->size; }},
    {"precision", "--precision", "", T::kString, 0, kInf, "strict|compat", false, false,
     "strict: outputs past the fp32 error budget against an fp64 oracle are a precision downgrade (hacked); compat: "
     "KernelGYM's allclose alone, the precision class reported",
     [](EvalRequest* r) -> FieldSlot { return &r->precision; }},
    {"coverage_floor", "--coverage-floor", "", T::kNumber, 0, 1, "", false, false,
     "GPU time coverage below this is reported (0 disables)",
     [](EvalRequest* r) -> FieldSlot { return &r->coverage_floor; }},
    {"", "--atol", "", T::kNumber, 0, kInf, "", false, false, "absolute tolerance (fp32)",
     [](EvalRequest* r) -> FieldSlot { return &r->atol; }},
    {"", "--rtol", "", T::kNumber, 0, kInf, "", false, false, "relative tolerance (fp32)",
     [](EvalRequest* r) -> FieldSlot { return &r->rtol; }},
    {"", "--memory-limit-gb", "", T::kNumber, 0, kInf, "", false, false, "host memory limit of the candidate",
     [](EvalRequest* r) -> FieldSlot { return &r->memory_limit_gb; }},
    {"", "--train-mode", "", T::kBool, 0, 0, "", false, false, "keep models in training mode",
     [](EvalRequest* r) -> FieldSlot { return &r->train_mode; }},
  };
  return kFields;
}
// clang-format on

std::vector<std::string> Choices(const RequestField& f) {
  std::vector<std::string> out;
  std::stringstream ss(f.choices);
  for (std::string c; std::getline(ss, c, '|');) out.push_back(c);
  return out;
}

// A limit as pydantic prints it: 1000, 0.0001.
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::optional<Problem> CheckNumber(const RequestField& f, const nlohmann::json& v, nlohmann::json* out) {
  double d;
  if (f.type == T::kInt) {
    if (v.is_number_integer())
      d = static_cast<double>(v.get<int64_t>());
    else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())
      d = v.get<double>();
    else
      return Problem{"Input should be a valid integer", "int_type"};
  } else {
    if (!v.is_number()) return Problem{"Input should be a valid number", "float_type"};
    d = v.get<double>();
  }
  if (d < f.lo) return Problem{"Input should be greater than or equal to " + Num(f.lo), "greater_than_equal"};
  if (d > f.hi) return Problem{"Input should be less than or equal to " + Num(f.hi), "less_than_equal"};
  if (out) *out = f.type == T::kInt ? nlohmann::json(static_cast<int64_t>(d)) : nlohmann::json(d);
  return std::nullopt;
}

std::optional<Problem> CheckString(const RequestField& f, const nlohmann::json& v, nlohmann::json* out) {
  if (!v.is_string()) return Problem{"Input should be a valid string", "string_type"};
  const std::string s = v.get<std::string>();
  if (s.size() < f.lo)
    return Problem{"String should have at least " + Num(f.lo) + " character" + (f.lo == 1 ? "" : "s"),
                   "string_too_short"};
  if (s.size() > f.hi) return Problem{"String should have at most " + Num(f.hi) + " characters", "string_too_long"};
  if (*f.choices && !s.empty()) {
    const std::vector<std::string> cs = Choices(f);
    bool ok = false;
    for (const auto& c : cs) ok |= c == s;
    if (!ok) {
      std::string list;
      for (size_t i = 0; i < cs.size(); ++i) list += (i ? (i + 1 == cs.size() ? " or '" : ", '") : "'") + cs[i] + "'";
      return Problem{"Input should be " + list, "enum"};
    }
  }
  if (out) *out = s;
  return std::nullopt;
}

}  // namespace

const std::vector<RequestField>& RequestFields() { return Table(); }

const RequestField* FindRequestField(const std::string& name) {
  for (const auto& f : Table())
    if (*f.name && name == f.name) return &f;
  return nullptr;
}

const RequestField* FindRequestFlag(const std::string& flag) {
  for (const auto& f : Table())
    if (*f.flag && flag == f.flag) return &f;
  return nullptr;
}

std::optional<Problem> CheckJson(const RequestField& f, const nlohmann::json& v, nlohmann::json* normalized) {
  switch (f.type) {
    case T::kInt:
    case T::kNumber:
      return CheckNumber(f, v, normalized);
    case T::kString:
      return CheckString(f, v, normalized);
    case T::kBool:
      if (!v.is_boolean()) return Problem{"Input should be a valid boolean", "bool_type"};
      if (normalized) *normalized = v;
      return std::nullopt;
  }
  return std::nullopt;
}

nlohmann::json Get(const RequestField& f, const EvalRequest& req) {
  EvalRequest copy = req;
  return std::visit(
      [&](auto* p) -> nlohmann::json {
        using V = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<V, double>)
          if (f.type == T::kInt) return static_cast<int64_t>(*p);
        return *p;
      },
      f.slot(&copy));
}

void Set(const RequestField& f, const nlohmann::json& v, EvalRequest* req) {
  std::visit([&](auto* p) { *p = v.get<std::remove_pointer_t<decltype(p)>>(); }, f.slot(req));
}

nlohmann::json TableJson() {
  static const char* kTypes[] = {"integer", "number", "boolean", "string"};
  const EvalRequest def;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : Table()) {
    nlohmann::json e = {{"name", f.name},
                        {"flag", f.flag},
                        {"keys", f.keys},
                        {"type", kTypes[static_cast<int>(f.type)]},
                        {"default", Get(f, def)},
                        {"choices", f.choices},
                        {"kernelgym", f.kernelgym},
                        {"agent_sends", f.agent_sends},
                        {"help", f.help}};
    if (f.type != T::kBool) {
      e["lo"] = f.lo;
      e["hi"] = std::isinf(f.hi) ? nlohmann::json() : nlohmann::json(f.hi);
    }
    out.push_back(std::move(e));
  }
  return out;
}

CLI::Validator Validator(const RequestField& f) {
  return CLI::Validator(
      [&f](std::string& text) -> std::string {
        nlohmann::json v;
        if (f.type == T::kString) {
          v = text;
        } else {
          v = nlohmann::json::parse(text, nullptr, false);
          if (v.is_discarded() || !v.is_number()) v = text;  // not a number: CheckJson says so
        }
        auto p = CheckJson(f, v);
        return p ? p->msg : std::string();
      },
      "", "");
}

CLI::Option* AddRequestFlag(CLI::App* app, const RequestField& f, FieldSlot target, const std::string& detail) {
  const std::string help = detail.empty() ? f.help : std::string(f.help) + ": " + detail;
  return std::visit(
      [&](auto* p) -> CLI::Option* {
        using V = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<V, bool>)
          return app->add_flag(f.flag, *p, help);
        else
          return app->add_option(f.flag, *p, help)->capture_default_str()->check(Validator(f));
      },
      target);
}

CLI::Option* AddRequestFlag(CLI::App* app, const std::string& flag, EvalRequest* req, const std::string& detail) {
  const RequestField* f = FindRequestFlag(flag);
  return f ? AddRequestFlag(app, *f, f->slot(req), detail) : nullptr;
}

}  // namespace kgym::request
