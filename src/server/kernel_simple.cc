#include "server/kernel_simple.h"

#include "request/request_fields.h"

namespace kgym {

namespace {
using nlohmann::json;

constexpr const char* kWorkflowKey = "workflow";  // EvalRequest::extra: which workflow made the job
constexpr const char* kCheckedKey = "kernel_simple_checks_correctness";
constexpr const char* kBackendKey = "kernel_simple_backend";  // the backend the request sent, where not kgym's

// The reference generated from the cases (kernel_simple.h). {SOURCE} is the cases' source (cases_code or the kernel
// code), {INLINE} a JSON string literal of the inline cases or None, {CHECK} True/False, {ENTRY} the candidate's class.
constexpr const char* kReferenceTemplate = R"PY({SOURCE}

# ---- kgym: the reference of a kernel_simple task, generated from its cases (src/server/kernel_simple.h) ----
import json as _kgym_json
import torch as _kgym_torch

_KGYM_INLINE = {INLINE}
_KGYM_CHECK = {CHECK}
_kgym_user_get_cases = globals().get("get_cases")
_kgym_user_get_inputs = globals().get("get_inputs")
_kgym_user_get_init_inputs = globals().get("get_init_inputs")
_kgym_state = {"cases": None, "next": 0}


def _kgym_tensorize(v):
    if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
        return _kgym_torch.tensor(v)
    if isinstance(v, list) and v and all(isinstance(x, list) for x in v):
        try:
            return _kgym_torch.tensor(v)
        except Exception:  # noqa: BLE001
            return [_kgym_tensorize(x) for x in v]
    return v


def _kgym_case(c):
    if isinstance(c, dict):
        ins = c.get("inputs", c.get("input"))
        outs = c.get("outputs", c.get("output"))
    else:
        ins, outs = c, None
    ins = list(ins) if isinstance(ins, (list, tuple)) else [ins]
    return {"inputs": ins, "outputs": outs}


def _kgym_cases():
    if _kgym_state["cases"] is None:
        if _KGYM_INLINE is not None:  # JSON: each argument and the expected outputs become tensors
            raw = [_kgym_case(c) for c in _kgym_json.loads(_KGYM_INLINE)]
            raw = [{"inputs": [_kgym_tensorize(x) for x in c["inputs"]], "outputs": _kgym_tensorize(c["outputs"])}
                   for c in raw]
        elif callable(_kgym_user_get_cases):
            raw = _kgym_user_get_cases()
        elif callable(_kgym_user_get_inputs):
            raw = [{"inputs": _kgym_user_get_inputs()}]
        else:
            raise RuntimeError("kernel_simple: no cases or inputs provided (cases, cases_code, get_cases or get_inputs)")
        if isinstance(raw, dict):
            raw = [raw]
        cases = [_kgym_case(c) for c in raw]
        if not cases:
            raise RuntimeError("kernel_simple: no cases or inputs provided")
        if _KGYM_CHECK:
            cases = [c for c in cases if c["outputs"] is not None]
            if not cases:
                raise RuntimeError("kernel_simple: no case has expected outputs")
        _kgym_state["cases"] = cases
    return _kgym_state["cases"]


def _kgym_clone(v):
    if isinstance(v, _kgym_torch.Tensor):
        return v.clone()
    if isinstance(v, (list, tuple)):
        return type(v)(_kgym_clone(x) for x in v)
    return v


def _kgym_same(a, b):
    if isinstance(a, _kgym_torch.Tensor) and isinstance(b, _kgym_torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(_kgym_torch.equal(a.cpu(), b.cpu()))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_kgym_same(x, y) for x, y in zip(a, b))
    return type(a) == type(b) and a == b


def _kgym_nan_like(v):
    if isinstance(v, _kgym_torch.Tensor):
        return _kgym_torch.full(v.shape, float("nan"), device=v.device)
    if isinstance(v, (list, tuple)):
        return type(v)(_kgym_nan_like(x) for x in v)
    return float("nan")


def get_inputs():
    cases = _kgym_cases()
    case = cases[_kgym_state["next"] % len(cases)]
    _kgym_state["next"] += 1
    return _kgym_clone(case["inputs"])


def get_init_inputs():
    return list(_kgym_user_get_init_inputs()) if callable(_kgym_user_get_init_inputs) else []


if _KGYM_CHECK:
    class {REFCLASS}(_kgym_torch.nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()

        def forward(self, *args):
            cases = _kgym_cases()
            for case in cases:
                if _kgym_same(list(args), case["inputs"]):
                    out = case["outputs"]
                    return _kgym_clone(out.to(args[0].device) if isinstance(out, _kgym_torch.Tensor) and args and
                                       isinstance(args[0], _kgym_torch.Tensor) else out)
            # Inputs no case gave (kgym's widened trials): non-finite, so the trial is skipped.
            return _kgym_nan_like(cases[0]["outputs"])
else:
    class {REFCLASS}({ENTRY}):
        pass
)PY";

void Replace(std::string* s, const std::string& from, const std::string& to) {
  for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size()))
    s->replace(p, from.size(), to);
}

bool IsNull(const json& b, const char* k) { return !b.contains(k) || b[k].is_null(); }

Status Invalid(const char* k, const std::string& what) {
  return Status::InvalidArgument(std::string("payload.") + k + " must be " + what);
}

// The payload's fields, as KernelGYM's KernelSimpleTask reads them; a missing or mistyped field is an error that
// names it (KernelGYM's dataclass fails on those too).
struct Fields {
  const json& b;
  Status status;

  std::string Str(const char* k, const std::string& def, bool required = false) {
    if (IsNull(b, k)) {
      if (required && status.ok()) status = Status::InvalidArgument(std::string("payload.") + k + " is required");
      return def;
    }
    if (!b[k].is_string()) {
      if (status.ok()) status = Invalid(k, "a string");
      return def;
    }
    return b[k].get<std::string>();
  }
  bool Flag(const char* k, bool def) {
    if (IsNull(b, k)) return def;
    if (!b[k].is_boolean()) {
      if (status.ok()) status = Invalid(k, "true or false");
      return def;
    }
    return b[k].get<bool>();
  }
  // An integer field of the request table (request/request_fields.h), within the table's limits.
  int Int(const char* k, int def) {
    const request::RequestField& f = *request::FindRequestField(k);
    const int lo = static_cast<int>(f.lo), hi = static_cast<int>(f.hi);
    if (IsNull(b, k)) return def;
    if (!b[k].is_number_integer() || b[k].get<int64_t>() < lo || b[k].get<int64_t>() > hi) {
      if (status.ok()) status = Invalid(k, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return def;
    }
    return static_cast<int>(b[k].get<int64_t>());
  }
};

// Whether the cases' source spells an expected-output key ("outputs" / "output", quoted as a dict key).
bool NamesOutputs(const std::string& text) {
  for (const char* k : {"\"outputs\"", "'outputs'", "\"output\"", "'output'"})
    if (text.find(k) != std::string::npos) return true;
  return false;
}
}  // namespace

bool IsKernelSimple(const EvalRequest& req) { return req.extra.value(kWorkflowKey, "") == "kernel_simple"; }

bool KernelSimpleChecksCorrectness(const EvalRequest& req) { return req.extra.value(kCheckedKey, true); }

void AsKernelSimpleResult(const EvalRequest& req, EvalResult* r) {
  if (auto sent = req.extra.find(kBackendKey); sent != req.extra.end() && r->metadata.is_object())
    r->metadata["backend"] = *sent;
  // The generated reference runs the kernel's (or its cases') code: its failure is that code failing to load.
  const std::string broken = "the reference is broken (";
  if (r->error_code != "VALIDATION_ERROR" || r->error_message.rfind(broken, 0) != 0) return;
  const size_t colon = r->error_message.find("): ");
  const std::string detail = colon == std::string::npos ? "" : r->error_message.substr(colon + 3);
  r->error_code = "RUNTIME_ERROR";
  r->error_message = "Failed to load cases" + (detail.empty() ? std::string() : ": " + detail);
}

Status ParseKernelSimplePayload(const json& b, ParsedRequest* out) {
  if (!b.is_object()) return Status::InvalidArgument("payload must be an object");
  Fields f{b, Status::Ok()};
  ParsedRequest p;
  EvalRequest& r = p.job.request;
  r.task_id = f.Str("task_id", "", true);
  const std::string code = f.Str("kernel_code", "", true);
  std::string entry = f.Str("entry_point", "ModelNew");
  if (entry == "Model" && code.find("class ModelNew") != std::string::npos) entry = "ModelNew";  // KernelGYM's rule
  r.num_perf_trials = f.Int("num_perf_trials", 100);
  r.num_warmup = f.Int("num_warmup", 3);
  r.timeout_s = f.Int("timeout", 300);
  // kgym builds a candidate as Triton or CUDA; any other backend runs as Triton code and is reported as sent.
  const std::string backend = f.Str("backend", "triton");
  r.backend = backend == "cuda" ? "cuda" : "triton";
  if (backend != r.backend) r.extra[kBackendKey] = backend;
  if (!PriorityFromName(f.Str("priority", "normal"), &p.job.priority) && f.status.ok())
    f.status = Invalid("priority", "'low', 'normal' or 'high'");
  const std::string cases_code = f.Str("cases_code", "");
  r.measure_performance = f.Flag("run_performance", true);
  r.enable_profiling = f.Flag("enable_profiling", true);
  p.force_refresh = f.Flag("force_refresh", false);
  const bool inline_cases = !IsNull(b, "cases");
  if (inline_cases && !b["cases"].is_array() && !b["cases"].is_object() && f.status.ok())
    f.status = Invalid("cases", "a list of case objects");
  const bool has_outputs = NamesOutputs(inline_cases ? b["cases"].dump() : cases_code.empty() ? code : cases_code);
  const bool check = f.Flag("run_correctness", has_outputs) && has_outputs;
  if (!f.status.ok()) return f.status;

  if (code.find("class " + entry) == std::string::npos) {
    // KernelGYM's workflow validation: accepted, finished without evaluation.
    EvalResult v;
    v.task_id = r.task_id;
    v.outcome = Outcome::kCompileError;
    v.outcome_detail = "validation";
    v.error_code = "VALIDATION_ERROR";
    v.error_message = "Kernel code validation failed: Code must contain a '" + entry + "' class";
    p.precheck_failure = v;
  }
  // The candidate class must be <entry point>New for kgym: a class of another name gets that alias.
  const bool ends_new = entry.size() > 3 && entry.compare(entry.size() - 3, 3, "New") == 0;
  r.entry_point = ends_new ? entry.substr(0, entry.size() - 3) : entry;
  r.kernel_code = ends_new ? code : code + "\n\nclass " + entry + "New(" + entry + "):\n    pass\n";
  r.detect_decoy = false;  // kernel_simple has no decoy check

  // The cases' source: cases_code's when given (with the kernel code where the candidate's own class is the
  // reference), else the kernel code (inline cases take its get_init_inputs, as KernelGYM's).
  std::string source = code;
  if (!cases_code.empty()) source = check ? cases_code : code + "\n\n" + cases_code;
  std::string ref = kReferenceTemplate;
  Replace(&ref, "{INLINE}", inline_cases ? json(b["cases"].dump()).dump() : "None");
  Replace(&ref, "{CHECK}", check ? "True" : "False");
  Replace(&ref, "{REFCLASS}", r.entry_point);
  Replace(&ref, "{ENTRY}", entry);
  Replace(&ref, "{SOURCE}", source);  // last: the user's text, nothing in it is a placeholder
  r.reference_code = ref;
  r.extra[kWorkflowKey] = "kernel_simple";
  r.extra[kCheckedKey] = check;
  p.job.id = r.task_id;
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace kgym
